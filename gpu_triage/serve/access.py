"""``kubectl auth can-i`` (a ``SelfSubjectAccessReview``): the one POST that is answered,
because it asks a question and changes nothing (the API server does not store reviews
either). ``get`` and ``list`` of what serve answers for are allowed; everything else is
denied, with the reason -- so ``kubectl auth can-i delete pods`` says ``no``.

kubectl sends the review as JSON or, as its typed clients do, as Kubernetes protobuf
(``k8s\x00`` then a ``runtime.Unknown`` whose ``raw`` is the review): only the few
string fields of ``spec.resourceAttributes`` are read from it, by field number
(``k8s.io/api/authorization/v1/generated.proto``), and the answer is JSON."""

from __future__ import annotations

from typing import Any

import orjson

from gpu_triage.serve.catalog import KINDS

PATH = ["apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"]
_READ = ("get", "list")


_MAGIC = b"k8s\x00"
# ResourceAttributes field numbers (authorization/v1 generated.proto)
_ATTRIBUTES = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource",
               6: "subresource", 7: "name"}


def _fields(data: bytes) -> dict[int, list[bytes | int]]:
    """The top-level fields of one protobuf message; ValueError when it is not one."""
    found: dict[int, list[bytes | int]] = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            found.setdefault(number, []).append(value)
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise ValueError("field past the end")
            found.setdefault(number, []).append(data[at:at + size])
            at += size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def _message(fields: dict[int, list[bytes | int]], number: int) -> dict[int, list[bytes | int]]:
    value = fields.get(number, [b""])[0]
    if not isinstance(value, bytes):
        raise ValueError(f"field {number} is not a message")
    return _fields(value)


def _from_protobuf(body: bytes) -> dict[str, Any]:
    """The review's spec, as JSON would give it."""
    review = _message(_fields(body[len(_MAGIC):]), 2)  # runtime.Unknown.raw
    attributes = _message(_message(review, 2), 1)  # spec.resourceAttributes
    return {"resourceAttributes": {
        name: value.decode("utf-8", "replace") for number, name in _ATTRIBUTES.items()
        if isinstance(value := attributes.get(number, [b""])[0], bytes)}}


def review(body: bytes) -> tuple[int, dict[str, Any]]:
    """(HTTP code, the review with its status), or (400, a reason) for a body that is not
    a SelfSubjectAccessReview."""
    try:
        if body.startswith(_MAGIC):
            spec: Any = _from_protobuf(body)
        else:
            asked = orjson.loads(body)
            spec = asked.get("spec") if isinstance(asked, dict) else None
    except (orjson.JSONDecodeError, ValueError):
        return 400, {"message": "the body is not a SelfSubjectAccessReview in JSON or "
                                "protobuf"}
    attributes = spec.get("resourceAttributes") if isinstance(spec, dict) else None
    if not isinstance(attributes, dict):
        return 400, {"message": "only resourceAttributes reviews are answered"}
    verb, resource = str(attributes.get("verb", "")), str(attributes.get("resource", ""))
    group = str(attributes.get("group", ""))
    sub = str(attributes.get("subresource", ""))
    known = any(k.resource == resource and k.group == group for k in KINDS)
    allowed = known and verb in _READ and (sub == "" or (resource, sub, verb) ==
                                          ("pods", "log", "get"))
    if allowed:
        reason = "gpu-triage serve answers get and list from the bundle"
    elif not known:
        reason = "gpu-triage serve does not answer for this resource"
    else:
        reason = "gpu-triage serve is read-only"
    status: dict[str, Any] = {"allowed": allowed, "reason": reason}
    if not allowed:
        status["denied"] = True
    return 201, {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
                 "metadata": {}, "spec": spec, "status": status}
