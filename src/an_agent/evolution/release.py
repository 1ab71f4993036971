"""At a patch, the cluster becomes its core: the fragments the cohesion gate set aside leave it.

Round 1 kept set-aside fragments as members so that they could not start a cluster of their own; the
cost was that a cluster behind a patch reported members that do not say what its key says, and the
one-offs that joined it early kept pulling its centroid towards "the customer <does something>". Now,
when a patch is made (`release_set_aside`):

- each set-aside fragment leaves the cluster: its vector, its heat contribution (decayed to now), its
  trigger-window entry and its client count are taken off, and it goes back to the pool as a fragment
  arriving at its own time does — to the best other cluster that admits it, else to a new cluster;
- the cluster's member sample is rebuilt from its core, and it keeps its core's outlier test
  (`cohesion.Admission`): from now on a fragment joins it, or a cluster merges into it, only when the
  core would keep that fragment (`pool.Cluster.admits`, `pool.SchemaPool.cohere`). Cohesion and size
  then describe the fragments the key was made from.

An event ``fragments-released`` says how many left and where to. Only the newest fragments synthesis
read (``SYNTHESIS_FRAGMENTS``) are examined; older ones stay. The admission test lives in memory: a
cluster restored from the store takes fragments by the ordinary rule until its next patch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from an_agent.evolution.cohesion import Core, admission_of
from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.pool import MEMBER_SAMPLE, Cluster, decayed
from an_agent.evolution.state import EngineState
from an_agent.schemas.embedding import Vectors
from an_agent.store.evolution import FragmentRow


def release_set_aside(
    state: EngineState,
    cluster: Cluster,
    fragments: Sequence[FragmentRow],
    vectors: Vectors,
    core: Core,
    now: float,
) -> list[str]:
    """Make ``cluster`` its ``core`` (module docstring); returns the ids of the clusters the others went to.

    ``fragments``/``vectors``: what synthesis examined (oldest first), ``core``: indexes into them.
    """
    kept = set(core.members)
    gone = [i for i in range(len(fragments)) if i not in kept]
    core_vectors = vectors[sorted(kept)]
    cluster.admission = admission_of(core_vectors)
    if not gone:
        return []
    pool = state.pool(cluster.schema_id)
    half_life = state.config.half_life_s
    heat = cluster.heat_now(now, half_life)
    for i in gone:
        fragment = fragments[i]
        cluster.vector_sum = (cluster.vector_sum - vectors[i]).astype(np.float32)
        heat -= decayed(state.config.heat_increment, fragment.ts, now, half_life)
        _forget(cluster, fragment.ts, fragment.client_id)
    cluster.size -= len(gone)
    cluster.heat, cluster.heat_at = max(heat, 0.0), max(now, cluster.heat_at)
    cluster.members.clear()
    cluster.add_members(list(core_vectors[-MEMBER_SAMPLE:]))
    pool.add_loaded(cluster)  # its centroid changed: re-index it
    landed: list[str] = []
    for i in gone:
        fragment = fragments[i]
        unit = vectors[i].astype(np.float32)
        target = pool.choose(unit, text=fragment.text)
        if target is None or target is cluster:
            new_id = f"c{state.store.next_number('cluster'):05d}"
            target = pool.start(new_id, unit, fragment.ts, fragment.client_id)
        else:
            pool.join(target, unit, fragment.ts, fragment.client_id)
        state.store.move_fragment(fragment.seq, target.cluster_id)
        state.save_cluster(target)
        landed.append(target.cluster_id)
    state.save_cluster(cluster)
    state.emit(
        EvolutionEvent(
            "fragments-released",
            now,
            cluster.schema_id,
            cluster_id=cluster.cluster_id,
            detail=f"{len(gone)} of {len(fragments)} fragments set aside by the core left for "
            f"{', '.join(dict.fromkeys(landed))}",
        )
    )
    return landed


def _forget(cluster: Cluster, when: float, client_id: str) -> None:
    """Take one fragment's (time, client) off the cluster's window and client counts."""
    if (when, client_id) in cluster.window:
        cluster.window.remove((when, client_id))
        cluster.window_clients[client_id] -= 1
        if cluster.window_clients[client_id] <= 0:
            del cluster.window_clients[client_id]
    cluster.clients[client_id] -= 1
    if cluster.clients[client_id] <= 0:
        del cluster.clients[client_id]
