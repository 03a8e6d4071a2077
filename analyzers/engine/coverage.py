"""Whether a rule could read what it judges: its status when its inputs are damaged.

A rule that found nothing has *checked* only what it could read. When a file it needs
was refused, did not parse, or parsed only in part, "no finding" must not read as
"checked and healthy". The engine asks this module, after every rule has run (so the
answer does not depend on which rule read a file first), and changes the status:

- ``skipped`` when nothing of an input could be used: every file of it in the bundle
  was lost whole (refused, or did not parse at all);
- ``partial`` when some of it was read: the rule judged what remained, and the reason
  names the damaged files.

A collection step that failed where the data existed (refused by RBAC, node unreachable,
timed out: analyzers/knowledge/gaps.py) counts as a file lost whole. A rule that failed keeps
``failed`` (what it found stands) and names the damaged files in its reason. Rules with
per-node inputs also depend on ``cluster/nodes.json``: it is how GPU nodes are chosen.
When it is damaged, every node directory counts as a GPU node (analyzers/facts/gpu.py),
so such a rule is ``partial``, never ``skipped``, for that file alone. Optional inputs
only corroborate and never change a status, except in a rule that requires none: there
they are what it judges, together, so it is ``skipped`` when every one of them was lost
(the engine already skips it when none is in the bundle) and ``partial`` when any was
damaged.
"""

from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from dataclasses import dataclass

from analyzers.knowledge.gaps import LOST, kind_of
from analyzers.results.models import RuleResult, RuleStatus
from analyzers.rule import Input, Rule
from bundle import Bundle, specs
from bundle.problems import Problem
from bundle.reader import NODES_JSON

_GLOB = frozenset("*?[")
# What the collector's manifest says about a JSON list it shortened to fit
# --max-file-bytes (collectors/collect.py write_json): whole items dropped, still valid.
SHORTENED = "shortened by the collector to fit --max-file-bytes"
_NAMED = 3  # damaged files named in a reason; the rest are counted


@dataclass(frozen=True, slots=True)
class Damage:
    """The damaged files of one rule's inputs: ``lost`` were unusable whole."""

    problems: tuple[Problem, ...]
    all_lost: bool

    def describe(self) -> str:
        named = "; ".join(f"{p.path}: {p.message}" for p in self.problems[:_NAMED])
        more = len(self.problems) - _NAMED
        return named + (f"; and {more} more damaged file(s)" if more > 0 else "")


class Coverage:
    """An index of the bundle's damaged files by the shape rule inputs are written in."""

    def __init__(self, bundle: Bundle) -> None:
        self._bundle = bundle
        self._cluster: dict[str, Problem] = {}
        self._nodes: dict[str, list[Problem]] = defaultdict(list)  # node-relative path
        damaged = bundle.damaged()
        for item in bundle.manifest.failed_items:
            # a step that failed where the data existed (RBAC, unreachable, timed out)
            if item.path and item.path not in damaged and kind_of(item) in LOST:
                error = " ".join((item.error or "").split())[:200]
                damaged[item.path] = Problem(item.path, f"not collected: {error}",
                                             kind="collection", lost=True)
        for path, note in shortened_lists(bundle):
            # a list that parses but lacks items: what was judged is not the whole
            damaged.setdefault(path, Problem(path, note, kind="shortened"))
        layout = bundle.layout_report
        for path, note in layout.partial if layout is not None else ():
            # a foreign layout that holds part of what the file stands for
            damaged.setdefault(path, Problem(path, note, kind="layout"))
        for path, problem in damaged.items():
            parts = path.split("/", 2)
            if parts[0] == "nodes" and len(parts) == 3:
                self._nodes[parts[2]].append(problem)
            else:
                self._cluster[path] = problem

    def _problems(self, needed: Input) -> list[Problem]:
        table: dict[str, Problem] | dict[str, list[Problem]]
        table = self._nodes if needed.per_node else self._cluster
        if _GLOB.isdisjoint(needed.path):
            found = table.get(needed.path)
            keys = [needed.path] if found else []
        else:
            keys = [k for k in table if fnmatch.fnmatchcase(k, needed.path)]
        out: list[Problem] = []
        for key in sorted(keys):
            value = table[key]
            out.extend(value if isinstance(value, list) else [value])
        return out

    def _readable(self, needed: Input) -> int:
        """How many files of the input the bundle holds (refused ones are not held)."""
        bundle = self._bundle
        prefixes = [specs.node_dir(node) for node in bundle.node_names] if needed.per_node else [""]
        if _GLOB.isdisjoint(needed.path):
            return sum(bundle.has(prefix + needed.path) for prefix in prefixes)
        head = re.split(r"[*?\[]", needed.path, maxsplit=1)[0]
        return sum(fnmatch.fnmatchcase(path[len(prefix):], needed.path)
                   for prefix in prefixes for path in bundle.paths_under(prefix + head))

    def damage(self, rule: type[Rule]) -> Damage | None:
        problems: list[Problem] = []
        unusable: list[bool] = []  # per declared input: nothing of it could be used
        alternatives = _alternatives(rule)
        for needed in required_inputs(rule):
            found = self._problems(needed)
            problems.extend(found)
            if needed not in rule.inputs:  # cluster/nodes.json, implied by per-node inputs
                continue
            # unusable when every file of it that the bundle holds was lost whole (a
            # refused member is not held: the rule was skipped for it before it ran);
            # an alternative the bundle does not hold at all is unusable too
            held_lost = sum(p.lost and self._bundle.has(p.path) for p in found)
            if held_lost:
                unusable.append(held_lost >= self._readable(needed))
            elif alternatives and not found:
                unusable.append(self._readable(needed) == 0)
            else:
                unusable.append(False)
        if not problems:
            return None
        # alternatives are unusable together only; one required input suffices
        all_lost = all(unusable) if alternatives else any(unusable)
        unique = {p.path: p for p in problems}
        return Damage(tuple(sorted(unique.values(), key=lambda p: p.path)), all_lost)

    def fell_back(self, rule: type[Rule]) -> str | None:
        """What the rule judged instead of its damaged fallback inputs, or None."""
        said = []
        for needed in rule.inputs:
            if needed.fallback is None:
                continue
            found = self._problems(needed)
            if found:
                named = "; ".join(p.describe() for p in found[:_NAMED])
                more = f" and {len(found) - _NAMED} more" if len(found) > _NAMED else ""
                said.append(f"{named}{more}; judged with {needed.fallback} instead")
        return "; ".join(said) or None

    def judge(self, rule: type[Rule], result: RuleResult) -> RuleResult:
        """The result with its status and reason corrected for damaged inputs; what the
        rule itself said it could not judge (``Rule.unjudged``) is kept after it."""
        if result.status not in (RuleStatus.PASSED, RuleStatus.FAILED, RuleStatus.PARTIAL):
            return result
        result = self._fallen_back(rule, result)
        damage = self.damage(rule)
        if damage is None:
            return result
        own = f"; {result.reason}" if result.reason else ""
        if result.status is RuleStatus.FAILED:
            reason = f"judged without damaged input: {damage.describe()}{own}"
            return result.model_copy(update={"reason": reason})
        if damage.all_lost:
            return result.model_copy(update={"status": RuleStatus.SKIPPED,
                                             "reason": f"cannot judge: {damage.describe()}"})
        return result.model_copy(update={"status": RuleStatus.PARTIAL,
                                         "reason": f"read in part: {damage.describe()}{own}"})


    def _fallen_back(self, rule: type[Rule], result: RuleResult) -> RuleResult:
        """A rule that judged a fallback in place of an unreadable input says so: passed
        becomes partial; failed keeps its findings and names it."""
        fallback = self.fell_back(rule)
        if fallback is None:
            return result
        own = f"; {result.reason}" if result.reason else ""
        if result.status is RuleStatus.FAILED:
            return result.model_copy(update={"reason": f"fell back: {fallback}{own}"})
        return result.model_copy(update={"status": RuleStatus.PARTIAL,
                                         "reason": f"fell back: {fallback}{own}"})


def shortened_lists(bundle: Bundle) -> list[tuple[str, str]]:
    """(path, note) of each JSON list the collector shortened: the manifest item says
    ``truncated`` and, from collectors/collect.py, how many items it kept of how many."""
    found = []
    for item in bundle.manifest.items:
        if not item.truncated or not item.path.endswith(".json") or not bundle.has(item.path):
            continue
        extra = item.model_extra or {}
        kept, total = extra.get("items_kept"), extra.get("items_total")
        counted = (f": {kept:,} of {total:,} items kept"
                   if isinstance(kept, int) and isinstance(total, int) else "")
        found.append((item.path, f"{SHORTENED}{counted}"))
    return found


def _alternatives(rule: type[Rule]) -> bool:
    """Whether the rule's inputs are alternatives: it requires none of them."""
    return bool(rule.inputs) and all(needed.optional for needed in rule.inputs)


def required_inputs(rule: type[Rule]) -> list[Input]:
    """The inputs whose damage changes the rule's status: the required ones (every
    input, when the rule requires none), and ``cluster/nodes.json`` for a rule with
    per-node inputs."""
    required = [needed for needed in rule.inputs
                if not needed.optional or _alternatives(rule)]
    if any(needed.per_node for needed in required) and all(
            needed.path != NODES_JSON for needed in required):
        required.append(Input(NODES_JSON))
    return required
