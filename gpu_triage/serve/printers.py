"""The columns ``kubectl get`` prints for each served kind, and each row's cells.

The server prints, not kubectl: kubectl asks for ``application/json;as=Table`` and shows
the columns it gets (priority 1 only with ``-o wide``). The columns and how each cell is
worked out follow the API server's own printers (Kubernetes
``pkg/printers/internalversion/printers.go``: ``printPod``, ``printNode``,
``printEvent``, ``printDaemonSet`` ...), on the JSON the bundle holds. Custom resources
print ``Name`` and ``Age`` plus the ``additionalPrinterColumns`` of their CRD where the
bundle holds it, as the API server does for them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from gpu_triage.serve.ages import since

Obj = dict[str, Any]
Column = tuple[str, str, int]  # name, type, priority
Row = Callable[[Obj, datetime], list[Any]]

_NAME: Column = ("Name", "string", 0)
_AGE: Column = ("Age", "string", 0)
_WIDE_TEMPLATE: tuple[Column, ...] = (("Containers", "string", 1), ("Images", "string", 1),
                                      ("Selector", "string", 1))


def _get(obj: Any, *path: str) -> Any:
    for step in path:
        obj = obj.get(step) if isinstance(obj, dict) else None
    return obj


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _name(obj: Obj) -> str:
    return str(_get(obj, "metadata", "name") or "")


def _age(obj: Obj, now: datetime) -> str:
    return since(_get(obj, "metadata", "creationTimestamp"), now)


def _or_none(text: str) -> str:
    return text or "<none>"


def _selector(selector: Any) -> str:
    """A LabelSelector as ``k=v,k2 in (a,b)`` (metav1.FormatLabelSelector)."""
    if not isinstance(selector, dict):
        return "<none>"
    terms = [f"{k}={v}" for k, v in sorted(_dict(_get(selector, "matchLabels")).items())]
    for expression in _list(selector.get("matchExpressions")):
        values = ",".join(str(v) for v in _list(_get(expression, "values")))
        operator = str(_get(expression, "operator") or "").lower()
        key = _get(expression, "key")
        terms.append(f"{key} {operator} ({values})" if values else
                     (f"!{key}" if operator == "doesnotexist" else str(key)))
    return ",".join(terms) or "<none>"


def _template_wide(obj: Obj) -> list[Any]:
    containers = _list(_get(obj, "spec", "template", "spec", "containers"))
    return [",".join(str(_get(c, "name") or "") for c in containers),
            ",".join(str(_get(c, "image") or "") for c in containers),
            _selector(_get(obj, "spec", "selector"))]


# -- pods -------------------------------------------------------------------------------

def _pod(obj: Obj, now: datetime) -> list[Any]:
    status = _dict(_get(obj, "status"))
    spec_containers = _list(_get(obj, "spec", "containers"))
    reason = str(status.get("reason") or status.get("phase") or "")
    initializing = False
    inits = _list(status.get("initContainerStatuses"))
    for index, init in enumerate(inits):
        terminated, waiting = _get(init, "state", "terminated"), _get(init, "state", "waiting")
        if isinstance(terminated, dict) and _int(terminated.get("exitCode")) == 0:
            continue
        if isinstance(terminated, dict):
            reason = "Init:" + _exit(terminated)
        elif isinstance(waiting, dict) and waiting.get("reason") not in (None, "",
                                                                        "PodInitializing"):
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{index}/{len(_list(_get(obj, 'spec', 'initContainers')))}"
        initializing = True
        break
    ready = restarts = 0
    last_restart: str | None = None
    running = False
    for container in [*inits, *_list(status.get("containerStatuses"))]:
        restarts += _int(_get(container, "restartCount"))
        finished = _get(container, "lastState", "terminated", "finishedAt")
        if isinstance(finished, str) and (last_restart is None or finished > last_restart):
            last_restart = finished
    if not initializing:
        for container in reversed(_list(status.get("containerStatuses"))):
            waiting = _get(container, "state", "waiting")
            terminated = _get(container, "state", "terminated")
            if isinstance(waiting, dict) and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif isinstance(terminated, dict):
                reason = _exit(terminated)
            elif _get(container, "ready") and isinstance(_get(container, "state", "running"),
                                                       dict):
                running = True
                ready += 1
        if reason == "Completed" and running:
            is_ready = any(_get(c, "type") == "Ready" and _get(c, "status") == "True"
                           for c in _list(status.get("conditions")))
            reason = "Running" if is_ready else "NotReady"
    if _get(obj, "metadata", "deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    shown = str(restarts)
    if last_restart is not None and restarts:
        shown = f"{restarts} ({since(last_restart, now)} ago)"
    gates = _list(_get(obj, "spec", "readinessGates"))
    conditions = {str(_get(c, "type")): _get(c, "status") for c in
                  _list(status.get("conditions"))}
    gates_ready = sum(conditions.get(str(_get(g, "conditionType"))) == "True" for g in gates)
    return [_name(obj), f"{ready}/{len(spec_containers)}", reason, shown, _age(obj, now),
            _or_none(str(status.get("podIP") or "")),
            _or_none(str(_get(obj, "spec", "nodeName") or "")),
            _or_none(str(status.get("nominatedNodeName") or "")),
            f"{gates_ready}/{len(gates)}" if gates else "<none>"]


def _exit(terminated: Obj) -> str:
    if terminated.get("reason"):
        return str(terminated["reason"])
    if _int(terminated.get("signal")):
        return f"Signal:{terminated['signal']}"
    return f"ExitCode:{_int(terminated.get('exitCode'))}"


# -- nodes and events -------------------------------------------------------------------

def _node(obj: Obj, now: datetime) -> list[Any]:
    status = _dict(_get(obj, "status"))
    ready = next((_get(c, "status") for c in _list(status.get("conditions"))
                  if _get(c, "type") == "Ready"), None)
    state = {"True": "Ready", "False": "NotReady"}.get(str(ready), "Unknown")
    if _get(obj, "spec", "unschedulable") is True:
        state += ",SchedulingDisabled"
    labels = _dict(_get(obj, "metadata", "labels"))
    roles = sorted({k[len("node-role.kubernetes.io/"):] for k in labels
                    if k.startswith("node-role.kubernetes.io/")} |
                   ({str(labels["kubernetes.io/role"])} if labels.get("kubernetes.io/role")
                    else set()))
    addresses = _list(status.get("addresses"))
    info = _dict(status.get("nodeInfo"))

    def address(kind: str) -> str:
        return next((str(_get(a, "address")) for a in addresses if _get(a, "type") == kind),
                    "<none>")

    return [_name(obj), state, ",".join(r for r in roles if r) or "<none>", _age(obj, now),
            str(info.get("kubeletVersion") or ""), address("InternalIP"), address("ExternalIP"),
            *(_or_none(str(info.get(key) or "")) for key in (
                "osImage", "kernelVersion", "containerRuntimeVersion"))]


def _event(obj: Obj, now: datetime) -> list[Any]:
    last = obj.get("lastTimestamp") or obj.get("eventTime")
    first = obj.get("firstTimestamp") or obj.get("eventTime")
    count = _int(obj.get("count")) or _int(_get(obj, "series", "count")) or 1
    involved = _dict(obj.get("involvedObject"))
    target = f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}"
    source = _dict(obj.get("source"))
    component = source.get("component") or obj.get("reportingComponent") or ""
    host = source.get("host") or obj.get("reportingInstance") or ""
    shown_source = f"{component}, {host}" if host else str(component)
    return [since(last, now), obj.get("type") or "", obj.get("reason") or "", target,
            involved.get("fieldPath") or "", shown_source,
            str(obj.get("message") or "").strip(), since(first, now), count, _name(obj)]


# -- the rest ---------------------------------------------------------------------------

def _daemonset(obj: Obj, now: datetime) -> list[Any]:
    status = _dict(_get(obj, "status"))
    selector = _dict(_get(obj, "spec", "template", "spec", "nodeSelector"))
    nodes = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"
    return [_name(obj), *(_int(status.get(f)) for f in (
        "desiredNumberScheduled", "currentNumberScheduled", "numberReady",
        "updatedNumberScheduled", "numberAvailable")), nodes, _age(obj, now),
        *_template_wide(obj)]


def _deployment(obj: Obj, now: datetime) -> list[Any]:
    status = _dict(_get(obj, "status"))
    wanted = _get(obj, "spec", "replicas")
    return [_name(obj), f"{_int(status.get('readyReplicas'))}/{_int(wanted)}",
            _int(status.get("updatedReplicas")), _int(status.get("availableReplicas")),
            _age(obj, now), *_template_wide(obj)]


def _quota(obj: Obj, now: datetime) -> list[Any]:
    hard = _dict(_get(obj, "status", "hard")) or _dict(_get(obj, "spec", "hard"))
    used = _dict(_get(obj, "status", "used"))
    requests: list[str] = []
    limits: list[str] = []
    for key in sorted(hard):
        shown = f"{key}: {used.get(key, 0)}/{hard[key]}"
        (limits if key.startswith("limits.") else requests).append(shown)
    return [_name(obj), _age(obj, now), ", ".join(requests), ", ".join(limits)]


TABLES: dict[str, tuple[tuple[Column, ...], Row]] = {
    "Pod": ((_NAME, ("Ready", "string", 0), ("Status", "string", 0), ("Restarts", "string", 0),
             _AGE, ("IP", "string", 1), ("Node", "string", 1), ("Nominated Node", "string", 1),
             ("Readiness Gates", "string", 1)), _pod),
    "Node": ((_NAME, ("Status", "string", 0), ("Roles", "string", 0), _AGE,
              ("Version", "string", 0), ("Internal-IP", "string", 1),
              ("External-IP", "string", 1), ("OS-Image", "string", 1),
              ("Kernel-Version", "string", 1), ("Container-Runtime", "string", 1)), _node),
    "Event": ((("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0),
               ("Object", "string", 0), ("Subobject", "string", 1), ("Source", "string", 1),
               ("Message", "string", 0), ("First Seen", "string", 1), ("Count", "string", 1),
               ("Name", "string", 1)), _event),
    "Namespace": ((_NAME, ("Status", "string", 0), _AGE),
                  lambda o, now: [_name(o), _get(o, "status", "phase") or "", _age(o, now)]),
    "ConfigMap": ((_NAME, ("Data", "integer", 0), _AGE),
                  lambda o, now: [_name(o), len(_dict(o.get("data"))) +
                                  len(_dict(o.get("binaryData"))), _age(o, now)]),
    "ResourceQuota": ((_NAME, _AGE, ("Request", "string", 0), ("Limit", "string", 0)), _quota),
    "DaemonSet": ((_NAME, ("Desired", "integer", 0), ("Current", "integer", 0),
                   ("Ready", "integer", 0), ("Up-to-date", "integer", 0),
                   ("Available", "integer", 0), ("Node Selector", "string", 0), _AGE,
                   *_WIDE_TEMPLATE), _daemonset),
    "Deployment": ((_NAME, ("Ready", "string", 0), ("Up-to-date", "integer", 0),
                    ("Available", "integer", 0), _AGE, *_WIDE_TEMPLATE), _deployment),
    "RuntimeClass": ((_NAME, ("Handler", "string", 0), _AGE),
                     lambda o, now: [_name(o), o.get("handler") or "", _age(o, now)]),
    "CustomResourceDefinition": ((_NAME, ("Created At", "date", 0)),
                                 lambda o, now: [_name(o), _get(o, "metadata",
                                                                "creationTimestamp") or ""]),
}


def custom_columns(crd: Obj | None, version: str) -> tuple[tuple[Column, ...], Row]:
    """Name, the CRD's ``additionalPrinterColumns`` of ``version`` (simple ``.a.b``
    paths), and Age unless the CRD prints it already."""
    extra: list[tuple[Column, list[str]]] = []
    for served in _list(_get(crd, "spec", "versions")):
        if _get(served, "name") != version:
            continue
        for column in _list(_get(served, "additionalPrinterColumns")):
            path = str(_get(column, "jsonPath") or "")
            if path.startswith(".") and all(part for part in path[1:].split(".")):
                extra.append(((str(_get(column, "name")), str(_get(column, "type") or "string"),
                               _int(_get(column, "priority"))), path[1:].split(".")))
    has_age = any(path == ["metadata", "creationTimestamp"] for _, path in extra)

    def row(obj: Obj, now: datetime) -> list[Any]:
        cells: list[Any] = [_name(obj)]
        for (_, kind, _), path in extra:
            value = _get(obj, *path)
            cells.append(since(value, now) if kind == "date" else
                         ("<none>" if value is None else value))
        return cells if has_age else [*cells, _age(obj, now)]

    columns = (_NAME, *(c for c, _ in extra), *(() if has_age else (_AGE,)))
    return columns, row
