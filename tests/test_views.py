"""bundle.views: declared fields read leniently, with the issues located exactly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundle import kube
from bundle.views import View, _read_by_plan, key


class Inner(View):
    name: str = ""
    size: int | None = None


class Outer(View):
    title: str = "untitled"
    count: int = 0
    flag: bool = False
    note: str | None = None
    renamed: int = key("legacy_name", 7)
    labels: dict[str, str]
    spec: dict[str, Any]
    inner: Inner
    maybe: Inner | None = None
    items: list[Inner]
    raw: Any = None


def test_absent_fields_take_their_defaults_and_fresh_containers() -> None:
    first, issues = Outer.parse({})
    second, _ = Outer.parse({})
    assert issues == []
    assert (first.title, first.count, first.flag, first.note, first.renamed) == \
        ("untitled", 0, False, None, 7)
    assert first.labels == {} and first.items == [] and first.inner == Inner()
    first.labels["x"] = "1"
    assert second.labels == {}  # defaults are not shared between objects


def test_values_of_the_right_type_are_kept_as_parsed() -> None:
    labels = {"a": "1"}
    raw = {"title": "t", "count": 3, "flag": True, "note": "n", "legacy_name": 9,
           "labels": labels, "spec": {"x": [1]}, "inner": {"name": "i", "size": 2},
           "maybe": {"name": "m"}, "items": [{"name": "a"}, {"name": "b"}], "raw": [1, {}]}
    view, issues = Outer.parse(raw)
    assert issues == []
    assert view.labels is labels  # a map of strings is not copied
    assert view.renamed == 9 and view.raw == [1, {}] and view.maybe == Inner(name="m")
    assert [item.name for item in view.items] == ["a", "b"]


def test_lax_conversions() -> None:
    view, issues = Outer.parse({"title": 5, "count": "12", "flag": "true", "note": 1.5,
                                "labels": {"gpu": 8, "ok": "x"}, "inner": {"size": 4.0}})
    assert issues == []
    assert (view.title, view.count, view.flag, view.note) == ("5", 12, True, "1.5")
    assert view.labels == {"gpu": "8", "ok": "x"} and view.inner.size == 4


@pytest.mark.parametrize(("raw", "loc", "message"), [
    ({"title": None}, ("title",), "Input should be a valid string"),
    ({"title": True}, ("title",), "Input should be a valid string"),
    ({"count": "many"}, ("count",), "Input should be a valid integer"),
    ({"count": 1.5}, ("count",), "Input should be a valid integer"),
    ({"count": "²"}, ("count",), "Input should be a valid integer"),
    ({"count": "+-5"}, ("count",), "Input should be a valid integer"),
    ({"count": "1_000"}, ("count",), "Input should be a valid integer"),
    ({"count": "9" * 5000}, ("count",), "Input should be a valid integer"),
    ({"count": 1e300}, ("count",), "Input should be a valid integer"),
    ({"count": 2**63}, ("count",), "Input should be a valid integer"),
    ({"count": -(2**63) - 1}, ("count",), "Input should be a valid integer"),
    ({"count": "99999999999999999999"}, ("count",), "Input should be a valid integer"),
    ({"flag": "maybe"}, ("flag",), "Input should be a valid boolean"),
    ({"labels": 5}, ("labels",), "Input should be a valid dictionary"),
    ({"labels": {"a": [1]}}, ("labels", "a"), "Input should be a valid string"),
    ({"spec": []}, ("spec",), "Input should be a valid dictionary"),
    ({"inner": "x"}, ("inner",), "Input should be a valid dictionary"),
    ({"inner": {"size": {}}}, ("inner", "size"), "Input should be a valid integer"),
    ({"maybe": 3}, ("maybe",), "Input should be a valid dictionary"),
    ({"items": {}}, ("items",), "Input should be a valid list"),
    ({"items": [{"name": "a"}, 3]}, ("items", 1), "Input should be a valid dictionary"),
    ({"items": [{"name": []}]}, ("items", 0, "name"), "Input should be a valid string"),
])
def test_a_wrong_value_is_dropped_and_located(raw: dict[str, Any], loc: tuple[Any, ...],
                                              message: str) -> None:
    view, issues = Outer.parse(raw)
    assert issues == [(loc, message)]
    defaults = Outer()
    if loc[0] in ("title", "count", "flag", "labels", "spec", "maybe"):
        if loc == ("labels", "a"):
            assert view.labels == {}
        else:
            assert getattr(view, str(loc[0])) == getattr(defaults, str(loc[0]))


def test_wrong_list_items_are_dropped_one_by_one() -> None:
    view, _ = Outer.parse({"items": [{"name": "a"}, 3, None, {"name": "d"}]})
    assert [item.name for item in view.items] == ["a", "d"]


def test_null_is_accepted_for_optional_fields_only() -> None:
    view, issues = Outer.parse({"note": None, "maybe": None, "raw": None, "count": None})
    assert (view.note, view.maybe, view.raw, view.count) == (None, None, None, 0)
    assert issues == [(("count",), "Input should be a valid integer")]


def test_views_built_in_code() -> None:
    taint = kube.Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
    assert (taint.key, taint.value, taint.effect) == \
        ("node.kubernetes.io/unschedulable", None, "NoSchedule")
    with pytest.raises(TypeError, match="no field 'colour'"):
        kube.Taint(colour="red")


def test_equality_and_repr() -> None:
    assert Inner(name="a") == Inner(name="a") != Inner(name="b")
    assert repr(Inner(name="a")) == "Inner(name='a', size=None)"
    with pytest.raises(TypeError):
        hash(Inner())


def test_unsupported_annotations_are_refused_when_declared() -> None:
    with pytest.raises(TypeError, match="unsupported view field annotation 'float'"):
        class Bad(View):  # noqa: F841
            ratio: float = 0.0


def test_kube_objects_keep_only_declared_fields_and_their_source() -> None:
    pod, issues = kube.Pod.parse({
        "metadata": {"name": "p", "namespace": "ml", "managedFields": [{"time": "t"}]},
        "spec": {"nodeName": "gpu-1", "affinity": {"nodeAffinity": {}},
                 "containers": [{"name": "c", "securityContext": {"privileged": True},
                                 "env": [{"name": "E", "valueFrom": {"x": 1}}],
                                 "resources": {"limits": {"nvidia.com/gpu": 2}}}],
                 "volumes": [{"name": "v"}]},
        "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}})
    assert issues == []
    assert (pod.name, pod.namespace, pod.spec.node_name) == ("p", "ml", "gpu-1")
    assert pod.spec.affinity == {"nodeAffinity": {}}
    container = pod.spec.containers[0]
    assert container.security_context == {"privileged": True}
    assert container.env[0].value_from == {"x": 1}
    assert container.resources.limits == {"nvidia.com/gpu": "2"}
    assert pod.status.start_time == "2026-01-01T00:00:00Z"
    assert not hasattr(pod.metadata, "managed_fields")  # kept for ConfigMaps only
    assert pod.source_path == "" and pod.source_pointer == ""
    pod.locate("cluster/pods.json", "/items/4")
    assert (pod.source_path, pod.source_pointer) == ("cluster/pods.json", "/items/4")


def test_daemonset_status_reads_the_api_names() -> None:
    status, _ = kube.DaemonSetStatus.parse({"desiredNumberScheduled": 3, "numberReady": "2"})
    assert (status.desired, status.current, status.ready, status.available) == (3, 0, 2, 0)


def test_optional_fields_default_to_none() -> None:
    with pytest.raises(TypeError, match="optional field 'note' must default to None"):
        class Bad(View):  # noqa: F841
            note: str | None = "x"


_KEYS = sorted({f.json_key for view in (kube.Pod, kube.ObjectMeta, kube.PodSpec, kube.PodStatus,
                                        kube.Container, kube.ContainerStatus,
                                        kube.ContainerState, kube.ContainerStateDetail,
                                        kube.Condition, kube.Toleration, kube.EnvVar,
                                        kube.OwnerReference, kube.ResourceRequirements)
                for f in view._fields} | {"x", "nvidia.com/gpu"})
_SCALAR = st.none() | st.booleans() | st.integers(-3, 10**20) | st.floats(allow_nan=False) | \
    st.sampled_from(["", "7", "+3", "true", "No", "x", "1.0", "²"])
_JSON = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3) |
                     st.dictionaries(st.sampled_from(_KEYS), inner, max_size=6), max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(raw=st.dictionaries(st.sampled_from(_KEYS), _JSON, max_size=8))
def test_the_compiled_reader_reads_like_the_plan(raw: dict[str, Any]) -> None:
    """Small inputs are read by plan and large ones by compiled code: same views, same
    issues, whatever the JSON holds."""
    for view in (kube.Pod, kube.PodSpec, kube.PodStatus, kube.ContainerStatus):
        by_plan: list[Any] = []
        compiled: list[Any] = []
        slow = _read_by_plan(view, raw, ("items", 0), by_plan)
        fast = view._compile()(raw, ("items", 0), compiled)
        assert repr(fast) == repr(slow)
        assert compiled == by_plan
