"""``make fuzz``: generated NETCONF inputs against a live agent; 0 crashes, 0 hung sessions, data unchanged.

Starts ``an-agent serve`` (a separate process, loopback, a fresh state
directory) with a users file holding an admin and a user in no group, and
sends ``--count`` inputs as that user over several sessions in parallel:
valid requests of every operation, the same requests mutated (bytes flipped,
cut, repeated, deep nesting, bad UTF-8, odd names and namespaces) and random
bytes, framed as NETCONF 1.1 (a share with malformed chunk headers, after
which the server must close the session; the fuzzer reconnects).

Counted as failures: the agent process exiting (crash); a reply that does
not come within ``--timeout`` seconds (hung session); an ``operation-failed``
reply reporting an internal error (an unhandled exception in the agent);
configuration that differs, for the admin, before and after.

    python -m bench.fuzz_netconf --count 100000 --seed 1
"""

from __future__ import annotations

import argparse
import json
import random
import re
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import paramiko

from bench.procs import start_serve

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
IRTF = "urn:ietf:params:xml:ns:yang:irtf-agent"
NOTIF = "urn:ietf:params:xml:ns:netconf:notification:1.0"

CORPUS = [
    "<get/>",
    f'<get><filter type="subtree"><agent xmlns="{IRTF}"><name/></agent></filter></get>',
    f'<get><filter type="xpath" xmlns:a="{IRTF}" select="/a:tasks/a:task[a:task-id=\'t1\']"/></get>',
    "<get-config><source><running/></source></get-config>",
    "<lock><target><running/></target></lock>",
    "<unlock><target><running/></target></unlock>",
    f'<edit-config><target><running/></target><config><tasks xmlns="{IRTF}"><task><task-id>f1</task-id>'
    "<task-sendFrom>fuzz</task-sendFrom><commuType>taskAssign</commuType><content>## target object\nSITE-07\n"
    "## task description\ndiagnose</content></task></tasks></config></edit-config>",
    f'<edit-config><target><running/></target><config><data-params xmlns="{IRTF}"><id>p1</id><dataType>text'
    "</dataType><format>application/json;schema=fault_diagnosis_v1</format><data>{&quot;schema_id&quot;: "
    "&quot;fault_diagnosis_v1&quot;, &quot;payload&quot;: {&quot;fault_type&quot;: &quot;unknown&quot;}}</data>"
    "</data-params></config></edit-config>",
    f'<task-negotiate xmlns="{IRTF}"><negotiate-type>FEASIBILITY</negotiate-type></task-negotiate>',
    '<get-schema xmlns="urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"><identifier>irtf-agent</identifier>'
    "</get-schema>",
    "<kill-session><session-id>1</session-id></kill-session>",
    '<get-schema-template xmlns="urn:an-agent:params:xml:ns:yang:an-agent-schema"><schema-id>fault_diagnosis_v1'
    "</schema-id></get-schema-template>",
    "<validate><source><running/></source></validate>",
    "<discard-changes/>",
]
_NASTY = [
    b"\xff",
    b"\xc3(",
    b"\x00",
    b"&",
    b"&#0;",
    b"<",
    b"]]>]]>",
    b"\n##\n",
    b"<![CDATA[",
    b"<!DOCTYPE x [",
    b"'",
    b'"',
]


def mutate(rng: random.Random, body: bytes) -> bytes:
    """One mutation of ``body`` (or a fresh random message)."""
    choice = rng.randrange(10)
    data = bytearray(body)
    if choice == 0 and data:  # flip bytes
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif choice == 1 and data:  # cut
        del data[rng.randrange(len(data)) :]
    elif choice == 2:  # insert nasty bytes
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.choice(_NASTY)
    elif choice == 3:  # deep nesting
        depth = rng.choice([10, 1000, 100000])
        data = bytearray(b"<get><filter>" + b"<a>" * depth + b"</a>" * depth + b"</filter></get>")
    elif choice == 4:  # rename an element
        text = data.decode("utf-8", "replace")
        data = bytearray(
            re.sub(
                r"<(\w[\w-]*)", lambda m: "<" + (m.group(1)[::-1] if rng.random() < 0.3 else m.group(1)), text
            ).encode()
        )
    elif choice == 5:  # repeat a slice
        if data:
            a = rng.randrange(len(data))
            data[a:a] = data[a : a + rng.randint(1, 200)] * rng.randint(2, 50)
    elif choice == 6:  # random bytes
        data = bytearray(rng.randbytes(rng.randint(0, 300)))
    elif choice == 7:  # a hostile xpath
        data = bytearray(
            rng.choice(
                [
                    b'<get><filter type="xpath" select="//*[count(//*[count(//*[count(//*)])])]"/></get>',
                    b'<get><filter type="xpath" xmlns:re="http://exslt.org/regular-expressions" '
                    b"select=\"//*[re:test(., '(a+)+$')]\"/></get>",
                    b'<get><filter type="xpath" select="' + b"(" * 500 + b"1" + b")" * 500 + b'"/></get>',
                ]
            )
        )
    elif choice == 8:  # namespace games
        data = data.replace(IRTF.encode(), rng.choice([b"", b"urn:x", NC.encode()]))
    # choice 9: the valid request itself
    return bytes(data)


class Fuzzer:
    def __init__(self, port: int, user: str, password: str, timeout: float) -> None:
        self.port, self.user, self.password, self.timeout = port, user, password, timeout
        self.channel: paramiko.Channel | None = None
        self.transport: paramiko.Transport | None = None
        self.buffer = b""

    def connect(self) -> None:
        self.close()
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
        self.transport = paramiko.Transport(sock)
        self.transport.connect(username=self.user, password=self.password)
        self.channel = self.transport.open_session()
        self.channel.settimeout(self.timeout)
        self.channel.invoke_subsystem("netconf")
        self.buffer = b""
        self._until(b"]]>]]>")
        self.channel.sendall(
            f'<hello xmlns="{NC}"><capabilities><capability>urn:ietf:params:netconf:base:1.1</capability>'
            "</capabilities></hello>]]>]]>".encode()
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.transport = self.channel = None

    def _until(self, marker: bytes) -> bytes:
        assert self.channel is not None
        while marker not in self.buffer:
            data = self.channel.recv(65536)
            if not data:
                raise EOFError
            self.buffer += data
        msg, _, self.buffer = self.buffer.partition(marker)
        return msg

    def exchange(self, body: bytes, bad_framing: bool) -> bytes | None:
        """Send one message; the reply, or None when the server closed the session (expected after bad framing)."""
        assert self.channel is not None
        message = b'<rpc xmlns="' + NC.encode() + b'" message-id="1">' + body + b"</rpc>"
        header = b"\n#%d\n" % len(message) if not bad_framing else b"\n#0%d\n" % len(message)
        try:
            self.channel.sendall(header + message + b"\n##\n")
            reply = b""
            while True:
                head = self._until(b"\n")
                if head == b"":
                    continue
                if head == b"##":
                    return reply
                size = int(head.lstrip(b"#"))
                while len(self.buffer) < size:
                    data = self.channel.recv(65536)
                    if not data:
                        raise EOFError
                    self.buffer += data
                reply += self.buffer[:size]
                self.buffer = self.buffer[size:]
        except TimeoutError:
            raise
        except (EOFError, OSError, paramiko.SSHException):
            return None


def _config(port: int) -> str:
    admin = Fuzzer(port, "admin", "admin-pw", 30)
    admin.connect()
    reply = admin.exchange(b"<get-config><source><running/></source></get-config>", False)
    admin.close()
    assert reply is not None
    return reply.decode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000, help="inputs to send (default 100000)")
    parser.add_argument("--sessions", type=int, default=4, help="parallel sessions (default 4)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds before a session counts as hung")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from an_agent.access.users import hash_password

    with tempfile.TemporaryDirectory(prefix="an-agent-fuzz-") as tmp:
        users = Path(tmp) / "users.yaml"
        users.write_text(
            f'users:\n  - name: admin\n    password: "{hash_password("admin-pw")}"\n    groups: [admin]\n'
            f'  - name: fuzzer\n    password: "{hash_password("fuzz-pw")}"\n    groups: []\n'
        )
        users.chmod(0o600)
        proc, port = start_serve(
            [
                "--state-dir",
                str(Path(tmp) / "state"),
                "--users",
                str(users),
                "--schemas",
                "validate",
                "--idle-timeout",
                "0",
            ]
        )
        before = _config(port)
        stats = {"sent": 0, "replies": 0, "reconnects": 0, "internal_errors": 0, "hung": 0}
        lock = threading.Lock()
        started = time.monotonic()

        def worker(index: int, count: int) -> None:
            rng = random.Random(args.seed * 1000 + index)
            fuzzer = Fuzzer(port, "fuzzer", "fuzz-pw", args.timeout)
            fuzzer.connect()
            for _ in range(count):
                body = mutate(rng, rng.choice(CORPUS).encode())
                try:
                    reply = fuzzer.exchange(body, bad_framing=rng.random() < 0.01)
                except TimeoutError:
                    with lock:
                        stats["hung"] += 1
                    reply = None
                with lock:
                    stats["sent"] += 1
                    if reply is None:
                        stats["reconnects"] += 1
                    else:
                        stats["replies"] += 1
                        if b"internal error" in reply:
                            stats["internal_errors"] += 1
                if reply is None:
                    if proc.poll() is not None:
                        return
                    fuzzer.connect()
            fuzzer.close()

        per = [args.count // args.sessions + (1 if i < args.count % args.sessions else 0) for i in range(args.sessions)]
        threads = [threading.Thread(target=worker, args=(i, n)) for i, n in enumerate(per)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        crashed = proc.poll() is not None
        after = _config(port) if not crashed else ""
        proc.terminate()
        proc.wait(timeout=30)
        result = {
            **stats,
            "crashed": crashed,
            "data_unchanged": before == after,
            "seconds": round(time.monotonic() - started, 1),
            "seed": args.seed,
        }
        print(json.dumps(result, indent=2))
        ok = not crashed and stats["hung"] == 0 and stats["internal_errors"] == 0 and before == after
        return 0 if ok and stats["sent"] >= args.count else 1


if __name__ == "__main__":
    sys.exit(main())
