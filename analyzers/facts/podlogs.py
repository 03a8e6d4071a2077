"""Container logs of pods (``logs/<ns>/<pod>/<container>[.previous].log``) and what they say.

Logs are found per pod in the order its containers run: init containers in spec order,
then the app containers; for each, the current log and then the previous instance's.
Matching uses the signature knowledge base, so the wordings live in data, not here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers.knowledge import signatures
from analyzers.knowledge.signatures import SignatureMatch
from bundle import Bundle, specs
from bundle.evidence import Locator, clip
from bundle.kube import Pod

TAIL_LINES = 2


@dataclass(frozen=True, slots=True)
class ContainerLog:
    """One container log file of one pod."""

    pod: Pod
    container: str
    path: str
    text: str
    init: bool
    previous: bool
    _found: tuple[SignatureMatch, ...] | None = field(default=None, init=False, repr=False,
                                                     compare=False)

    def matches(self, rule_id: str | None = None, *,
                errors_only: bool = False) -> list[SignatureMatch]:
        """Known signatures in this log, optionally only those feeding ``rule_id``.

        The log is matched once; several rules ask about the same operand logs."""
        found = self._found
        if found is None:
            found = tuple(signatures.match(self.text, "log", container=self.container))
            object.__setattr__(self, "_found", found)  # a memo of a pure function
        return [m for m in found
                if (rule_id is None or rule_id in m.signature.rules)
                and (not errors_only or m.signature.kind == "error")]

    def locate(self, found: SignatureMatch) -> Locator:
        return Locator(path=self.path, line=found.line, excerpt=clip(found.text))

    def tail(self, count: int = TAIL_LINES) -> list[Locator]:
        """The last ``count`` non-empty lines, with their line numbers."""
        numbered = [(n, line) for n, line in enumerate(self.text.splitlines(), start=1)
                    if line.strip()]
        return [Locator(path=self.path, line=n, excerpt=clip(line))
                for n, line in numbered[-count:]]


def _container_names(pod: Pod, found: Iterable[str]) -> list[tuple[str, bool]]:
    names: list[tuple[str, bool]] = [(c.name, True) for c in pod.spec.init_containers]
    names += [(c.name, False) for c in pod.spec.containers]
    known = {name for name, _ in names}
    names += [(name, False) for name in sorted(set(found) - known)]
    return names


class PodLogs:
    """Reads each pod's logs once; ``of(pod)`` lists them in container run order."""

    def __init__(self, bundle: Bundle) -> None:
        self._bundle = bundle
        self._cache: dict[tuple[str, str], tuple[ContainerLog, ...]] = {}
        self._index: dict[tuple[str, str], list[str]] | None = None

    def of(self, pod: Pod) -> tuple[ContainerLog, ...]:
        key = (pod.namespace, pod.name)
        cached = self._cache.get(key)
        if cached is None:
            cached = tuple(self._read(pod))
            self._cache[key] = cached
        return cached

    def container(self, pod: Pod, name: str) -> tuple[ContainerLog, ...]:
        return tuple(log for log in self.of(pod) if log.container == name)

    def _read(self, pod: Pod) -> Iterable[ContainerLog]:
        if not self._bundle.paths_under(specs.pod_logs_dir(pod.namespace, pod.name)):
            return  # every path looked for below starts so: most pods have no log
        logs = self._bundle.logs
        if self._index is None:
            self._index = {}
            for namespace, pod_name, container in logs:
                self._index.setdefault((namespace, pod_name), []).append(container)
        present = self._index.get((pod.namespace, pod.name), [])
        for name, init in _container_names(pod, present):
            current = logs.get((pod.namespace, pod.name, name))
            if current is None:
                current = specs.log_file(pod.namespace, pod.name, name)
            previous = current[: -len(specs.LOG_SUFFIX)] + specs.PREVIOUS_LOG_SUFFIX
            for path, is_previous in ((current, False), (previous, True)):
                if not self._bundle.has(path):
                    continue
                text = self._bundle.read_text(path)
                if text:
                    yield ContainerLog(pod, name, path, text, init, is_previous)
