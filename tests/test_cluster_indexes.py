"""Cluster-level facts computed once per run, and the fast paths that read them: each
must answer exactly as the direct computation it replaces, on tricky inputs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kit import analyse
from kit.bundles import write_dir
from kit.gate import GPU, container, gpu_node, insufficient, pod_event, workload
from kit.gate import bundle_files as gate_files
from kit.objects import lists

from analyzers.engine import timeline
from analyzers.facts import Facts, scheduling
from analyzers.facts.gpu import container_gpus
from analyzers.facts.operands import COMPONENTS, NFD_WORKER, component_of
from analyzers.knowledge import signatures
from bundle import open_bundle
from bundle.kube import Container, Pod, quantity_int


@contextmanager
def _facts(tmp_path: Path, **kinds: list[dict[str, Any]]) -> Iterator[Facts]:
    with open_bundle(write_dir(tmp_path / "b", lists(**kinds))) as bundle:
        yield Facts(bundle)


def _event(name: str, reason: str, message: str | None, when: str | None, *,
           pod: str = "p", namespace: str = "ml", kind: str = "Pod") -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Event", "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": kind, "namespace": namespace, "name": pod},
        "reason": reason, "type": "Warning"}
    if message is not None:
        body["message"] = message
    if when is not None:
        body["lastTimestamp"] = when
    return body


# ---------------------------------------------------------------------- indexes


def test_pods_by_namespace_and_operator_pods_keep_bundle_order(tmp_path: Path) -> None:
    pods = [workload("b", "gpu-a"), workload("a", "gpu-a", namespace="gpu-operator"),
            workload("c"), workload("op", namespace="gpu-operator")]
    pods[3]["metadata"]["labels"] = {"app": "gpu-operator"}
    pods[0]["metadata"]["labels"] = {"app": "gpu-operator-not"}
    with _facts(tmp_path, nodes=[gpu_node("gpu-a", 1)], pods=pods) as facts:
        assert {ns: [p.name for p in found] for ns, found in
                facts.pods_by_namespace.items()} == {"ml": ["b", "c"],
                                                     "gpu-operator": ["a", "op"]}
        assert [p.name for p in facts.operator_pods] == ["op"]
        assert facts.gpu_node_set == frozenset({"gpu-a"})


def test_event_signatures_answer_as_matching_each_message(tmp_path: Path) -> None:
    quota = ('pods "x" is forbidden: exceeded quota: gpu-quota, requested: '
             "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, limited: "
             "requests.nvidia.com/gpu=4")
    events = [
        _event("e0", "FailedScheduling", insufficient(3, 2), "2026-11-29T13:00:00Z"),
        _event("e1", "FailedScheduling", insufficient(3, 2), "2026-11-29T13:01:00Z", pod="q"),
        _event("e2", "FailedCreate", quota, "2026-11-29T13:02:00Z"),
        _event("e3", "Scheduled", "Successfully assigned ml/p to gpu-a", None),
        _event("e4", "Nothing", None, None),
        _event("e5", "Nothing", "", None),
    ]
    with _facts(tmp_path, nodes=[], pods=[], events=events) as facts:
        found = [facts.event_signatures(e) for e in facts.bundle.cluster.events]
        assert found == [tuple(signatures.match(e.message or "", "event"))
                         for e in facts.bundle.cluster.events]
        assert [len(hits) > 0 for hits in found] == [True, True, True, False, False, False]
        assert found[0] is found[1]  # one message, matched once


def test_events_by_signature_answer_as_walking_every_event(tmp_path: Path) -> None:
    """``events_with``, ``pod_events_with`` and ``events_for`` give what a walk over
    every event (of the pod) that tests each event's signatures gives, in bundle order."""
    quota = ('pods "x" is forbidden: exceeded quota: gpu-quota, requested: '
             "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, limited: "
             "requests.nvidia.com/gpu=4")
    events = [
        _event("e0", "FailedScheduling", insufficient(3, 2), "2026-11-29T13:00:00Z"),
        _event("e1", "FailedCreate", quota, "2026-11-29T13:01:00Z", pod="q"),
        _event("e2", "FailedScheduling", insufficient(3, 2), "2026-11-29T13:02:00Z", pod="q"),
        _event("e3", "FailedScheduling", insufficient(3, 2), "2026-11-29T13:03:00Z",
               kind="Node", namespace="", pod="p"),
        _event("e4", "FailedScheduling", insufficient(1, 0), "2026-11-29T13:04:00Z"),
        _event("e5", "Scheduled", "Successfully assigned ml/p to gpu-a", None),
    ]
    pods = [workload("p", gpus=1), workload("q", gpus=1)]
    with _facts(tmp_path, nodes=[], pods=pods, events=events) as facts:
        every = facts.bundle.cluster.events
        ids = {hit.signature.id for event in every for hit in facts.event_signatures(event)}
        assert len(ids) >= 2
        for signature in sorted(ids):
            walked = [e for e in every
                      if any(h.signature.id == signature for h in facts.event_signatures(e))]
            assert facts.events_with(signature) == walked
            for pod in facts.bundle.cluster.pods:
                assert facts.pod_events_with(pod, signature) == [
                    e for e in facts.pod_events(pod) if e in walked]
        for rule in ("SC001", "SC004", "RT001"):
            assert facts.events_for(rule) == [
                e for e in every if any(rule in h.signature.rules
                                        for h in facts.event_signatures(e))]
        assert [e.metadata.name for e in facts.events_for("SC004")] == ["e1"]
        assert facts.events_with("no-such-signature") == []


# ------------------------------------------------------------------ pod helpers


def _component_directly(pod: Pod) -> str | None:
    """``component_of`` as it was written before its lookups were precomputed."""
    app = pod.metadata.labels.get("app", "")
    for component, prefix in COMPONENTS:
        if app == prefix:
            return component
    for component, prefix in COMPONENTS:
        if pod.name.startswith(prefix + "-"):
            return component
    labels = pod.metadata.labels
    if labels.get("app.kubernetes.io/name") == "node-feature-discovery" and \
            labels.get("role", labels.get("app.kubernetes.io/component")) == "worker":
        return NFD_WORKER
    if "nfd-worker" in pod.name or "node-feature-discovery-worker" in pod.name:
        return NFD_WORKER
    return None


def test_component_of_answers_as_the_ordered_scan() -> None:
    names = ["nvidia-dcgm-exporter-abc", "nvidia-dcgm-abc", "nvidia-dcgm", "nvidia-dcgmx-1",
             "nvidia-driver-daemonset-x", "nvidia-gpu-driver-ubuntu-1", "gpu-feature-discovery",
             "gpu-feature-discovery-1", "my-nfd-worker-1", "nvidia-mig-manager-",
             "nvidia-cuda-validator-q", "nvidia-operator-validator-nfd-worker", "", "x"]
    apps = [None, "", "nvidia-dcgm", "nvidia-dcgm-exporter", "gpu-feature-discovery",
            "nvidia-gpu-driver", "nvidia-driver-daemonset-x", "other"]
    checked = 0
    for name in names:
        for app in apps:
            labels = {} if app is None else {"app": app}
            pod = Pod.parse({"metadata": {"name": name, "labels": labels}})[0]
            assert component_of(pod) == _component_directly(pod), (name, app)
            checked += 1
    assert checked == len(names) * len(apps)


def _limits_directly(box: Container) -> dict[str, int]:
    found: dict[str, int] = {}
    for name in set(box.resources.limits) | set(box.resources.requests):
        if not name.startswith("nvidia.com/"):
            continue
        amount = quantity_int(box.resources.limits.get(name, box.resources.requests.get(name)))
        if amount:
            found[name] = amount
    return found


def test_container_limits_answer_as_limit_else_request() -> None:
    cases = [
        ({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "1"}),
        ({"nvidia.com/gpu": "0"}, {"nvidia.com/gpu": "4"}),      # a zero limit wins
        ({"nvidia.com/gpu": "1.5"}, {"nvidia.com/gpu": "1"}),    # unreadable limit wins
        ({}, {"nvidia.com/mig-1g.5gb": "3", "cpu": "2"}),
        ({"cpu": "1", "nvidia.com/gpu.shared": "2"}, {"nvidia.com/gpu": "0"}),
        ({}, {}),
    ]
    for limits, requests in cases:
        box = Container.parse({"name": "c", "resources": {"limits": limits,
                                                          "requests": requests}})[0]
        assert container_gpus(box) == _limits_directly(box), (limits, requests)


# ------------------------------------------------------------- the number gate


def test_pods_with_one_placement_share_their_rows_and_answer_as_alone(tmp_path: Path) -> None:
    nodes = [gpu_node("gpu-a", 4, 4, labels={"pool": "a"}),
             gpu_node("gpu-b", 8, 6, taints=[{"key": "gpu", "effect": "NoSchedule"}]),
             gpu_node("gpu-c", 2, 2, unschedulable=True, labels={"pool": "c"}),
             gpu_node("cpu-1", gpu_label=False)]
    toleration = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "In", "values": ["c"]}]}]}}}
    pods = [workload("r-0", gpus=8, owner="job"), workload("r-1", gpus=8, owner="job"),
            workload("r-2", gpus=8, tolerations=toleration),
            workload("r-3", gpus=8, node_selector={"pool": "a"}),
            workload("r-4", gpus=8, affinity=affinity),
            workload("r-5", gpus=2, affinity=affinity),
            workload("r-6", gpus=8, containers=[container(limits={GPU: 4}),
                                                container("b", limits={GPU: 4})]),
            workload("r-7", gpus=1, resource="nvidia.com/mig-1g.5gb"),
            workload("holder", "gpu-a", gpus=3)]
    with _facts(tmp_path, nodes=nodes, pods=pods) as facts:
        pending = facts.pending_gpu_pods
        together = scheduling.verdicts(pending, facts.bundle.cluster.nodes, facts.accounting,
                                       facts.gpu_nodes)
        alone = [scheduling.verdicts([pod], facts.bundle.cluster.nodes, facts.accounting,
                                     facts.gpu_nodes)[0] for pod in pending]
        assert [(v.pod.name, dict(v.request), v.resources) for v in together] == [
            (v.pod.name, dict(v.request), v.resources) for v in alone]
        assert [v.pod.name for v in together] == [f"r-{i}" for i in range(8)]
        by_name = {v.pod.name: v for v in together}
        assert by_name["r-0"].resources is by_name["r-1"].resources  # one placement
        assert by_name["r-0"].resources is by_name["r-6"].resources  # same request, 2 boxes
        assert len({id(v.resources) for v in together}) == 6
        assert [by_name[f"r-{i}"].branch.value for i in range(8)] == [
            "exceeds", "exceeds", "unhealthy", "exceeds", "blocked", "blocked", "exceeds",
            "not-advertised"]


def test_sc001_explains_shared_verdicts_per_pod(tmp_path: Path) -> None:
    from kit import findings

    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 2, 2)],
                 pods=[workload("r-0", gpus=4, owner="job"),
                       workload("r-1", gpus=4, owner="job")],
                 events=[pod_event("r-1", "FailedScheduling", insufficient(1, 1))]), tmp=tmp_path)
    found = findings(report, "SC001")
    assert sorted(found) == ["SC001:ml/r-0", "SC001:ml/r-1"]
    explained = ("asks for 4 nvidia.com/gpu and cannot be placed: it asks for 4 nvidia.com/gpu "
                 "but the largest eligible node, gpu-a, has capacity 2 and allocatable 2: the "
                 "request exceeds every node's allocatable, so it can never fit, whatever is "
                 "freed or repaired. Per node (capacity/allocatable/assigned/free): gpu-a "
                 "2/2/0/2.")
    assert found["SC001:ml/r-0"].summary == f"Pod ml/r-0 {explained}"
    assert found["SC001:ml/r-1"].summary == (
        f"Pod ml/r-1 {explained} The scheduler's event says 'Insufficient nvidia.com/gpu'; "
        "the numbers say: exceeds.")


# --------------------------------------------------------------------- timeline


def test_a_fold_shows_its_first_record_whatever_the_arrival_order(tmp_path: Path) -> None:
    """First by (time, subject, text); among equals the earliest in the bundle."""
    at = "2026-11-29T10:0{}:00Z"
    events = [
        _event("e0", "Fail", "zzz", at.format(3), pod="b"),
        _event("e1", "Fail", "yyy", at.format(1), pod="c"),
        _event("e2", "Fail", "xxx2", at.format(1), pod="a"),
        _event("e3", "Fail", "xxx1", at.format(1), pod="a"),
        _event("e4", "Fail", "xxx1", at.format(1), pod="a"),   # equal to e3, later
        _event("e5", "Fail", "aaa", at.format(2), pod="a"),
        _event("e6", "Fail", "late", "2026-11-29T10:06:00Z", pod="a"),
        _event("e7", "Fail", "no time", None, pod="a"),
    ]
    for order in (events, events[::-1]):
        with _facts(tmp_path / str(order is events), nodes=[], pods=[], events=order) as facts:
            built = timeline.build(facts, {})
        first, later = built.points
        # e3 in bundle order, e4 reversed: both at index 3, the earlier of two equals
        assert (first.time, first.until, first.text, first.subject, first.subjects,
                first.count, first.pointer) == (
            "2026-11-29T10:01:00Z", "2026-11-29T10:03:00Z", "Fail: xxx1", "Pod ml/a", 3, 6,
            "/items/3/message")
        assert (later.time, later.text, later.count) == ("2026-11-29T10:06:00Z", "Fail: late",
                                                         1)
        assert (built.total, built.untimed) == (7, 1)


# --------------------------------------------------------------------- pod logs


def test_pod_logs_look_only_in_the_pods_own_directory(tmp_path: Path) -> None:
    pods = [workload("p", "gpu-a"), workload("p-1", "gpu-a"), workload("q", "gpu-a")]
    files = lists(nodes=[gpu_node("gpu-a", 1)], pods=pods)
    files["logs/ml/p-1/main.log"] = "line one\n"
    files["logs/ml/q/main.previous.log"] = "the previous run\n"   # no current log
    with open_bundle(write_dir(tmp_path / "b", files)) as bundle:
        facts = Facts(bundle)
        by_name = {p.name: p for p in bundle.cluster.pods}
        assert facts.pod_logs.of(by_name["p"]) == ()
        assert [(log.path, log.previous) for log in facts.pod_logs.of(by_name["p-1"])] == [
            ("logs/ml/p-1/main.log", False)]
        assert [(log.path, log.text) for log in facts.pod_logs.of(by_name["q"])] == [
            ("logs/ml/q/main.previous.log", "the previous run\n")]


def test_a_logs_signatures_are_matched_once(tmp_path: Path) -> None:
    text = ("I1129 13:00:00 main.go:1] Retrieving plugins.\n"
            "E1129 13:00:01 factory.go:2] Incompatible strategy detected auto\n"
            "I1129 13:00:02 main.go:3] could not load NVML library\n")
    name = "nvidia-device-plugin-ctr"
    pods = [workload("plugin", "gpu-a", containers=[container(name)])]
    files = lists(nodes=[gpu_node("gpu-a", 1)], pods=pods)
    files[f"logs/ml/plugin/{name}.log"] = text
    with open_bundle(write_dir(tmp_path / "b", files)) as bundle:
        log, = Facts(bundle).pod_logs.of(bundle.cluster.pods[0])
        everything = signatures.match(text, "log", container=name)
        assert [m.line for m in everything] == [1, 2, 3]   # the marker and two errors
        assert log.matches() == everything
        assert log.matches(errors_only=True) == [m for m in everything
                                                 if m.signature.kind == "error"]
        assert log.matches() is not log.matches()   # callers get their own list


# ------------------------------------------------------------ containerd restarts


def test_nodes_restarted_at_the_same_moment_answer_as_every_pair() -> None:
    from analyzers.rules.rt._service import Restart, _Moments
    from bundle.textfiles import JournalEntry

    def start(minute: float | None) -> Restart:
        when = None if minute is None else base + timedelta(minutes=minute)
        return Restart(JournalEntry(1, "Started containerd.service", when, None, {}), None)

    base = datetime(2026, 11, 29, 13, 0, tzinfo=UTC)
    seen: dict[str, tuple[list[Restart], list[JournalEntry]]] = {
        "a": ([start(0), start(10)], []),
        "b": ([start(9), start(11)], []),          # exactly one minute after a's: counts
        "c": ([start(10), start(30)], []),         # its first start is the boot: not a restart
        "d": ([start(None), start(None), start(11.5)], []),
        "e": ([start(10.5)], []),
        "f": ([], []),
        "g": ([start(0), start(8.99), start(12.01)], []),   # just outside on both sides
    }

    def directly(name: str) -> list[str]:
        times = [r.entry.time for r in seen[name][0][1:] if r.entry.time is not None]
        return [other for other, (found, _) in sorted(seen.items()) if other != name and any(
            r.entry.time is not None and abs(r.entry.time - t) <= timedelta(minutes=1)
            for r in found[1:] for t in times)]

    moments = _Moments(seen)
    near = {name: moments.near(name, found[1:]) for name, (found, _) in seen.items()}
    assert near == {name: directly(name) for name in seen}
    assert (near["a"], near["b"], near["g"]) == (["b"], ["a", "d"], ["d"])


def test_manifest_items_under_a_prefix_answer_as_a_walk() -> None:
    from analyzers.rules.rt._refs import _ItemsByPath
    from bundle.manifest import ManifestItem

    paths = ["nodes/b/cdi/nvidia.yaml", "nodes/a/cdi", "nodes/a/cdix", "nodes/a/cd",
             "nodes/ab/cdi/x", "nodes/a/cdi/y", "cluster/pods.json", "nodes/a/cdi/b",
             "nodes/a/cdi/y", "nodes/a/b/cdi", ""]
    items = [ManifestItem(path=p, error=f"e{i}" if i % 2 else None) for i, p in enumerate(paths)]
    index = _ItemsByPath(items)
    for prefix in ("nodes/a/cdi", "nodes/a/", "nodes/b/cdi", "nodes/a/b/cdi", "nodes/c/cdi",
                   "", "nodes/a/cdi/y"):
        assert index.under(prefix) == [i for i in items if i.path.startswith(prefix)], prefix


def test_rules_affected_by_gaps_answer_as_matching_every_path() -> None:
    from fnmatch import fnmatchcase
    from types import SimpleNamespace

    from analyzers.engine.plugins import discover
    from analyzers.rules.bnd._base import _affected_rules
    from bundle.manifest import ManifestItem

    rules = [loaded.rule for loaded in discover().rules]
    paths = ["nodes/gpu-a/journal/containerd.jsonl", "nodes/gpu-b/journal/containerd.jsonl",
             "nodes/gpu-a", "nodes/gpu-a/", "cluster/pods.json", "cluster/helm/x.json",
             "nodes/gpu-c/containerd/files/etc/containerd/config.toml", "logs/ns/p/c.log",
             "nodes/gpu-d/nvidia-smi.xml", "manifest.json"]

    def directly(failed: list[str]) -> list[str]:
        def covers(per_node: bool, pattern: str, path: str) -> bool:
            parts = path.split("/", 2)
            if per_node:
                return len(parts) == 3 and parts[0] == "nodes" and fnmatchcase(parts[2], pattern)
            return fnmatchcase(path, pattern)

        return sorted({rule.id for rule in rules for needed in rule.inputs
                       if any(covers(needed.per_node, needed.path, p) for p in failed)})

    for count in range(len(paths) + 1):
        failed = paths[:count]
        ctx = SimpleNamespace(rules=rules)
        items = [ManifestItem(path=p, error="x") for p in failed]
        assert _affected_rules(ctx, items) == directly(failed), failed  # type: ignore[arg-type]
    assert "RT004" in directly(paths[:1]) and directly([]) == []


def test_a_placement_too_deep_to_write_out_gets_rows_of_its_own(tmp_path: Path) -> None:
    depth = 985  # orjson reads up to 1024 levels; repr() gives up before
    affinity = ('{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": '
                '{"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": '
                '"Exists"}], "deep": ' + "[" * depth + "]" * depth + "}]}}}")
    pod = ('{"kind": "Pod", "metadata": {"name": "deep", "namespace": "ml"}, "spec": '
           '{"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}], '
           f'"affinity": {affinity}}}, "status": {{"phase": "Pending"}}}}')
    files = lists(nodes=[gpu_node("gpu-a", 2, labels={"pool": "a"}), gpu_node("gpu-b", 2)])
    files["cluster/pods.json"] = ('{"kind": "List", "items": [' + pod + ", " + pod + "]}").encode()
    with open_bundle(write_dir(tmp_path / "b", files)) as bundle:
        facts = Facts(bundle)
        first, second = facts.pending_gpu_pods
        assert scheduling._placement(first, {GPU: 1}) is None
        found = scheduling.verdicts([first, second], bundle.cluster.nodes, facts.accounting,
                                    facts.gpu_nodes)
        assert found[0].resources is not found[1].resources
        assert found[0].resources == found[1].resources
        rows = found[0].resources[0].rows
        assert [(r.node, [b.kind for b in r.blockers]) for r in rows] == [
            ("gpu-a", []), ("gpu-b", ["affinity"])]
