"""Scenario schema templates, payload validation, ``other`` sanitising, NL -> payload mapping.

Importing this package does not load torch: embedding-backed functions take an `Embedder`.
"""

from an_agent.schemas.embedding import Embedder
from an_agent.schemas.mapping import MappingResult, map_text
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.sanitize import SanitizedOther, sanitize_other
from an_agent.schemas.template import OTHER_KEY, KeyDef, Template
from an_agent.schemas.validate import (
    MEDIA_TYPE_PREFIX,
    ValidatedPayload,
    media_type,
    parse_envelope,
    schema_id_from_media_type,
    validate_payload,
)

__all__ = [
    "MEDIA_TYPE_PREFIX",
    "OTHER_KEY",
    "Embedder",
    "KeyDef",
    "MappingResult",
    "SanitizedOther",
    "Template",
    "TemplateRegistry",
    "ValidatedPayload",
    "map_text",
    "media_type",
    "parse_envelope",
    "sanitize_other",
    "schema_id_from_media_type",
    "validate_payload",
]
