"""What an A2A user message becomes in the draft's terms (no SDK import beyond `an_agent.a2a.sdk`): the
agent it is sent for, the data-params and prompt of the task it makes or answers, and the refusal of
message configurations it cannot honour. `an_agent.a2a.face` calls these; the operation layer decides the rest.
"""

from __future__ import annotations

import json
import uuid

from an_agent.a2a.inbound import InboundMessage, accepts_our_output
from an_agent.a2a.sdk import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    InvalidRequestError,
    Message,
    PushNotificationNotSupportedError,
    SendMessageRequest,
    validate_history_length,
)
from an_agent.a2a.states import SENDER_KEY
from an_agent.model import DataParam, DataType, build_prompt
from an_agent.model.prompt import parse_prompt
from an_agent.runtime.principal import Principal
from an_agent.runtime.text_input import structured_param


def check_configuration(params: SendMessageRequest) -> None:
    """Refuse a message configuration this agent cannot honour, before anything is made.

    ``historyLength`` below zero (``InvalidParamsError``, spec 3.2.4); a push notification config (the card
    declares no push notifications: ``PushNotificationNotSupportedError``, spec 3.3.4, rather than a
    webhook that would never be called); ``acceptedOutputModes`` that take none of the media types results
    come in (``ContentTypeNotSupportedError``, spec 3.3.2: a media type "implied for an artifact").
    """
    validate_history_length(params.configuration)
    if params.configuration.HasField("task_push_notification_config"):
        raise PushNotificationNotSupportedError(
            message="this agent sends no push notifications (capabilities.pushNotifications is false): "
            "follow the task with SendStreamingMessage, SubscribeToTask or GetTask"
        )
    accepted = list(params.configuration.accepted_output_modes)
    if not accepts_our_output(accepted):
        raise ContentTypeNotSupportedError(
            message=f"acceptedOutputModes {', '.join(accepted)}: this agent's results are text/plain or "
            "application/json (application/json;schema=<name> for a structured result)"
        )


_KINDS = {
    "number_value": "a number",
    "bool_value": "true/false",
    "null_value": "null",
    "list_value": "a list",
    "struct_value": "an object",
    "string_value": "an empty string",
}


def metadata_string(message: Message, key: str) -> str:
    """The string the message's metadata gives for ``key`` ("" when the key is absent).

    Any other value (a number, null, an empty string...) is `InvalidParamsError` naming the key (spec 3.3.2:
    servers MUST validate all input): a client that asked for a task id or a sender must not get a default.
    """
    value = message.metadata.fields.get(key) if message.HasField("metadata") else None
    if value is None:
        return ""
    kind = value.WhichOneof("kind")
    if kind != "string_value" or not value.string_value:
        raise InvalidParamsError(
            message=f"message metadata {key!r} must be a non-empty string, not {_KINDS.get(kind or '', 'empty')}"
        )
    text: str = value.string_value
    return text


def sender(principal: Principal, message: Message) -> str:
    """``task-sendFrom``: the agent named in the message metadata (`SENDER_KEY`) when the caller may
    speak for it, else the caller's default (`Principal.default_sender`)."""
    agent = metadata_string(message, SENDER_KEY)
    if not agent:
        default = principal.default_sender()
        if default is None:
            raise InvalidRequestError(
                message=f"{principal.name} sends as one of {', '.join(sorted(principal.agent_names))}: "
                f"name it in the message metadata {SENDER_KEY!r}"
            )
        return default
    if not principal.may_speak_for(agent):
        raise InvalidRequestError(message=f"access denied: {principal.name} may not send tasks as {agent}")
    return agent


def answer_parts(task_id: str, inbound: InboundMessage) -> tuple[tuple[DataParam, ...], str | None]:
    """The data-params and new content of a message answering ``input-required`` (the face's answer to a task)."""
    stamp = uuid.uuid4().hex[:12]  # message ids are the client's and may repeat
    params: list[DataParam] = []
    prefix = f"{task_id}-input-{stamp}"
    if inbound.structured is not None:
        structured = inbound.structured
        params.append(structured_param(f"{prefix}-payload", structured.schema_id, structured.payload, "A2A data part"))
    content = inbound.text if inbound.text and parse_prompt(inbound.text).complete else None
    for suffix, fmt, data in (
        ("data", "application/json", None if inbound.data is None else json.dumps(inbound.data)),
        ("text", "text/plain", inbound.text if content is None else None),
    ):
        if data:
            what = f"{suffix} part of an A2A message answering input-required"
            params.append(DataParam(f"{prefix}-{suffix}", DataType.TEXT, description=what, format=fmt, data=data))
    return tuple(params), content


def task_content(text: str, params: list[DataParam]) -> str:
    """The task's prompt: the message's text when it is already a draft prompt, else one built around it."""
    if text and parse_prompt(text).complete:
        return text
    if params:
        what = f"the {params[0].format} payload of data-param {params[0].id}"
        return build_prompt(what, text or f"the task {params[0].format} describes")
    return build_prompt(text, text)
