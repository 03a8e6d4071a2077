"""The one builder of the lines a remediation offers to copy: commands and ``#`` comments.

Every value that comes from the bundle (namespaces, node, pod, container, release and
object names, label keys and values, file paths, PCI addresses) was chosen by whoever
wrote the bundle. A report shows remediation in a copy block, so no rule puts such a
value into a line with an f-string. It builds the line here instead::

    from analyzers import commands as sh

    sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", sh.pod(name), "-c", sh.container(c),
           "--tail=50", tail="   # the newest lines")
    sh.note("# on {node}, before rebooting:", node=sh.node(name))
    sh.lines(first, second, ...)          # the remediation text

- Each argument of :func:`cmd` is quoted for a POSIX shell (:func:`shlex.quote`); a
  static word such as ``get`` or ``--tail=50`` stays as it is.
- A bundle value goes through the checker of what it is (:func:`namespace`,
  :func:`node`, ...), which applies the rules Kubernetes (or Helm) applies to such a
  name. A value that is not a valid name for its role is refused: the line that needs it
  is not emitted; in its place comes one inert comment per refused value that shows it
  as data (escaped onto one line, capped, quoted), e.g.
  ``# not offered: the namespace in the bundle is not a valid Kubernetes name: 'a $(b)'``.
- :func:`raw` is static shell text the rule's author wrote (a pipe, a jsonpath in quotes,
  a placeholder such as ``<pod>``), never a bundle value; :func:`join` makes one argument
  of several parts.
- :func:`note` builds a comment line; the bundle values in it are checked and quoted the
  same way (an interactive zsh runs a pasted ``#`` line as a command unless
  ``interactivecomments`` is set, so a comment must be inert as shell words too).
  :func:`text` shows free bundle text (an error message, a UUID) in a note as data.

Every line comes out as one line: no newline, carriage return or other character that
ends a line, no control character.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, LiteralString

# Longest part of a refused or free-text value shown in a comment.
SHOWN_CAP = 80
REFUSED = "# not offered: "

_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS_LABEL = re.compile(_LABEL)
_DNS_SUBDOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_NAME_PART = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VERSION = re.compile(r"v?[0-9A-Za-z][0-9A-Za-z.+_-]*")
_PCI = re.compile(r"(?:[0-9A-Fa-f]{1,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f])?")
_PATH = re.compile(r"[A-Za-z0-9._+@%,:=/*-](?:[A-Za-z0-9._+@%,:=/* -]*[A-Za-z0-9._+@%,:=/*-])?")
_VALUES_KEY = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")
_VALUES_VALUE = re.compile(r"[A-Za-z0-9._/:@+-]*")
_WORD = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._+:-]*[A-Za-z0-9])?")


@dataclass(frozen=True, slots=True)
class Value:
    """A value from the bundle, checked for its role. ``ok`` False: refused."""

    text: str
    role: str     # "namespace", "node name", ... (what the bundle says it is)
    kind: str     # "a valid Kubernetes name", ... (what it would have to be)
    ok: bool

    def map(self, change: Callable[[str], str]) -> Value:
        """The same value, changed by static code (e.g. dots escaped for a jsonpath);
        a refused value stays refused."""
        return Value(change(self.text), self.role, self.kind, self.ok) if self.ok else self

    def refusal(self) -> str:
        return (f"{REFUSED}the {self.role} in the bundle is not {self.kind}: "
                f"{shown(self.text)}")


@dataclass(frozen=True, slots=True)
class Raw:
    """Static shell text written by the rule's author, put into the line as it is."""

    text: str


@dataclass(frozen=True, slots=True)
class Join:
    """One argument made of several parts, quoted as a whole."""

    parts: tuple[str | int | Value, ...]


@dataclass(frozen=True, slots=True)
class Text:
    """Free bundle text to show in a note: escaped onto one line, capped, quoted."""

    text: str


Arg = str | int | Value | Raw | Join


# -- checkers ----------------------------------------------------------------------------


def _check(text: str, role: str, kind: str, ok: bool) -> Value:
    return Value(text, role, kind, ok)


def _dns_label(text: str) -> bool:
    return len(text) <= 63 and _DNS_LABEL.fullmatch(text) is not None


def _dns_subdomain(text: str) -> bool:
    return len(text) <= 253 and _DNS_SUBDOMAIN.fullmatch(text) is not None


def _qualified(text: str) -> bool:
    """A label key or extended resource name: ``[prefix/]name``."""
    prefix, slash, name = text.rpartition("/")
    if slash and not _dns_subdomain(prefix):
        return False
    return len(name) <= 63 and _NAME_PART.fullmatch(name) is not None


def namespace(text: str) -> Value:
    """A namespace: a DNS-1123 label (63 characters at most)."""
    return _check(text, "namespace", "a valid Kubernetes name", _dns_label(text))


def node(text: str) -> Value:
    """A node name: a DNS-1123 subdomain (253 characters at most)."""
    return _check(text, "node name", "a valid Kubernetes name", _dns_subdomain(text))


def pod(text: str) -> Value:
    """A pod name: a DNS-1123 subdomain."""
    return _check(text, "pod name", "a valid Kubernetes name", _dns_subdomain(text))


def container(text: str) -> Value:
    """A container name: a DNS-1123 label."""
    return _check(text, "container name", "a valid Kubernetes name", _dns_label(text))


def name(text: str, role: str = "object name") -> Value:
    """The name of another object (ConfigMap, ResourceQuota, ClusterPolicy ...): a
    DNS-1123 subdomain. ``role`` names it in a refusal (``"ConfigMap name"``)."""
    return _check(text, role, "a valid Kubernetes name", _dns_subdomain(text))


def release(text: str) -> Value:
    """A Helm release name: lower-case DNS-1123 subdomain of 53 characters at most."""
    return _check(text, "Helm release name", "a valid Helm release name",
                  len(text) <= 53 and _DNS_SUBDOMAIN.fullmatch(text) is not None)


def label_key(text: str, role: str = "label key") -> Value:
    """A label (or taint) key: an optional DNS-1123 subdomain prefix and ``/``, then a
    name of 63 characters at most (alphanumerics, ``-``, ``_``, ``.``)."""
    return _check(text, role, "a valid label key", _qualified(text))


def label_value(text: str, role: str = "label value") -> Value:
    """A label (or taint) value: empty, or 63 characters at most of alphanumerics, ``-``,
    ``_``, ``.``, starting and ending with an alphanumeric."""
    ok = text == "" or (len(text) <= 63 and _NAME_PART.fullmatch(text) is not None)
    return _check(text, role, "a valid label value", ok)


def resource(text: str) -> Value:
    """An extended resource name (``nvidia.com/gpu``): the syntax of a label key."""
    return _check(text, "resource name", "a valid resource name", _qualified(text))


def version(text: str) -> Value:
    """A chart or image version: alphanumerics, ``.``, ``+``, ``_``, ``-`` (64 at most)."""
    return _check(text, "version", "a plain version string",
                  len(text) <= 64 and _VERSION.fullmatch(text) is not None)


def pci(text: str) -> Value:
    """A PCI address as nvidia-smi or the kernel print it (``00000000:3B:00.0``)."""
    return _check(text, "PCI address", "a PCI address", _PCI.fullmatch(text) is not None)


def path(text: str) -> Value:
    """A plain file path (1024 characters at most): letters, digits, ``. _ + @ % , : = /
    * -`` and single inner spaces; not starting with ``-`` (it would read as an option).
    ``*`` is allowed for a glob that the rule quotes on purpose."""
    ok = (len(text) <= 1024 and _PATH.fullmatch(text) is not None
          and not text.startswith("-") and "  " not in text)
    return _check(text, "file path", "a plain file path", ok)


def word(text: str, role: str) -> Value:
    """Any other short token (a taint effect, a strategy): alphanumerics and ``. _ + : -``,
    63 characters at most."""
    return _check(text, role, "a plain word", len(text) <= 63 and _WORD.fullmatch(text)
                  is not None)


def values_key(text: str) -> Value:
    """A Helm values key for ``--set`` (``driver.enabled``): dotted words of letters,
    digits, ``_`` and ``-``."""
    return _check(text, "Helm values key", "a plain values key",
                  len(text) <= 253 and _VALUES_KEY.fullmatch(text) is not None)


def values_value(value: object) -> Value:
    """A scalar Helm value for ``--set``: a boolean or number, or a string of letters,
    digits and ``. _ / : @ + -`` (no comma, which ``--set`` reads as a separator)."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    ok = isinstance(value, (bool, int, float, str)) and len(text) <= 253 \
        and _VALUES_VALUE.fullmatch(text) is not None
    return _check(text, "Helm value", "a plain value for --set", ok)


def raw(text: LiteralString) -> Raw:
    """Static shell text of the rule's author: a pipe, ``2>/dev/null``, a jsonpath in
    single quotes, a placeholder such as ``<pod>``. Never a bundle value."""
    if _breaks_line(text):
        raise ValueError(f"raw shell text must be one line: {text!r}")
    return Raw(text)


def join(*parts: str | int | Value) -> Join:
    """One argument of several parts (``spec.nodeName=`` and a node name)."""
    return Join(parts)


def text(value: object) -> Text:
    """Free bundle text for a :func:`note` (an error message, a UUID): shown as data."""
    return Text(str(value))


# -- lines -------------------------------------------------------------------------------


def _breaks_line(line: str) -> bool:
    return len(line.splitlines()) > 1 or any(not ch.isprintable() for ch in line)


def _escape(value: str) -> str:
    """``value`` as printable ASCII: backslash and everything else escaped."""
    out = []
    for ch in value:
        if ch == "\\":
            out.append("\\\\")
        elif " " <= ch <= "~":
            out.append(ch)
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def shown(value: str, cap: int = SHOWN_CAP) -> str:
    """A bundle value shown as data: escaped onto one line, capped at ``cap`` characters
    and quoted as one shell word (inert even where a pasted comment is run)."""
    body = _escape(value[:cap]) + ("..." if len(value) > cap else "")
    more = f", {len(value)} characters in all" if len(value) > cap else ""
    return shlex.quote(body) + more


def _refusals(values: Iterable[object]) -> list[str]:
    """The refusal comment of each refused value among ``values`` (once each)."""
    found: list[str] = []
    for value in values:
        parts = value.parts if isinstance(value, Join) else \
            value if isinstance(value, list) else (value,)
        for part in parts:
            if isinstance(part, Value) and not part.ok:
                line = part.refusal()
            elif isinstance(part, (str, int)) and not str(part).isprintable():
                line = f"{REFUSED}an argument is not printable text: {shown(str(part))}"
            else:
                continue
            if line not in found:
                found.append(line)
    return found


def _quoted(arg: str | int | Value | Join) -> str:
    if isinstance(arg, Value):
        return shlex.quote(arg.text)
    if isinstance(arg, Join):
        return shlex.quote("".join(str(p.text if isinstance(p, Value) else p)
                                   for p in arg.parts))
    return shlex.quote(str(arg))


def cmd(*args: Arg, tail: LiteralString = "") -> str:
    """One command line from its arguments, each quoted for the shell; ``tail`` is static
    text put after it as it is (``"   # one node at a time"``, ``" | grep -i fabric"``).
    A refused value turns the line into the comments that show each refused value."""
    if _breaks_line(tail):
        raise ValueError(f"the tail must be one line: {tail!r}")
    refused = _refusals(args)
    if refused:
        return "\n".join(refused)
    words: list[str] = []
    for arg in args:
        if isinstance(arg, Raw) and arg.text == ";" and words:
            words[-1] += ";"  # "kubectl cordon x; kubectl drain x"
        else:
            words.append(arg.text if isinstance(arg, Raw) else _quoted(arg))
    line = " ".join(words) + tail
    if _breaks_line(line):  # a Value.map() that put in a line break: never shown
        return f"{REFUSED}a line of the command is not printable text"
    return line


NoteValue = str | int | Value | Text | Raw | list[Value]


def note(template: LiteralString, **values: NoteValue) -> str:
    """A ``#`` comment line: ``template`` (static, ``str.format`` fields) with the values
    put in, each quoted as one shell word (a :func:`raw` one as it is; a list of values
    joined with ``, ``). A refused value turns the note into the comment that shows it."""
    if not template.startswith("#") or _breaks_line(template):
        raise ValueError(f"a note is one line starting with '#': {template!r}")
    refused = _refusals(v for v in values.values() if isinstance(v, (Value, list)))
    if refused:
        return "\n".join(refused)
    filled: dict[str, str] = {}
    data = False
    for key, value in values.items():
        if isinstance(value, list):
            filled[key] = ", ".join(shlex.quote(v.text) for v in value)
        elif isinstance(value, Value):
            filled[key] = shlex.quote(value.text)
        elif isinstance(value, Text):
            filled[key] = shown(value.text)
            data = True
        elif isinstance(value, Raw):
            filled[key] = value.text
        elif isinstance(value, int):
            filled[key] = str(value)
        elif _unsafe_word(value):
            filled[key] = shown(value, 1 << 30)
            data = True
        else:
            filled[key] = value
    line = template.format(**filled)
    return _Data(line) if data else line


class _Data(str):
    """A comment line that shows bundle text as a quoted word (see :func:`lines`)."""

    __slots__ = ()


_NODE_SHELL: dict[str, LiteralString] = {
    "ubuntu": "# on {node} (kubectl debug node/{node} -it --image=ubuntu -- chroot /host bash):",
    "busybox": "# on {node} (kubectl debug node/{node} -it --image=busybox -- chroot /host sh):",
}


def node_shell(node_name: Value, image: Literal["ubuntu", "busybox"] = "ubuntu") -> str:
    """The comment that opens a block of commands run on the node itself: how to get a
    root shell there (``kubectl debug node/...`` with ``image``, chrooted into the host)."""
    return note(_NODE_SHELL[image], node=node_name)


def _unsafe_word(value: str) -> bool:
    return shlex.quote(value) != value or any(not ch.isprintable() for ch in value)


def commented(content: str) -> list[str]:
    """Lines of a file (a drop-in to write) shown as comments, ``#   `` before each: data
    to read, never run. A line that holds anything a shell would act on even in a
    comment run as a command (``$``, a backquote, ``;``, ``|``, ``&``, ``<``, ``>``,
    parentheses, a backslash, an unbalanced quote, a character that is not printable) is
    shown escaped and quoted as one shell word instead."""
    out = []
    for line in content.splitlines():
        if _inert(line):
            out.append(f"#   {line}".rstrip())
        else:
            out.append(_Data(f"#   {shown(line, 1 << 30)}"))
    return out


_INERT = re.compile(r"[A-Za-z0-9 \t\"'._=/:,\[\]{}+@%*?#~^-]*")


def _inert(line: str) -> bool:
    """Nothing in ``line`` runs, redirects or expands when a shell reads it as words."""
    return _INERT.fullmatch(line) is not None and _balanced(line)


def lines(*items: str | Iterable[str]) -> str:
    """The remediation text: the lines joined, a refusal repeated later dropped.

    Where a line shows bundle text as data (a refusal, a :func:`text` value, a line of
    file content that is not inert), a static comment with an unbalanced apostrophe (``the
    operator's``) gets a typographic one instead: a shell that runs a pasted comment as a
    command (zsh without ``interactivecomments``) would otherwise read the quoted data of
    the lines below it as unquoted."""
    out: list[str] = []
    refused: set[str] = set()
    data = False
    for item in items:
        for line in _split([item] if isinstance(item, str) else item):
            if line.startswith(REFUSED):
                if line in refused:
                    continue
                refused.add(line)
            data = data or isinstance(line, _Data) or line.startswith(REFUSED)
            out.append(line)
    if data:
        out = [line.replace("'", "\u2019") if line.startswith("#") and not _balanced(line)
               else line for line in out]
    return "\n".join(out)


def _split(items: Iterable[str]) -> Iterable[str]:
    for item in items:
        if isinstance(item, _Data):
            yield item  # one line already, and it must stay marked
        else:
            yield from item.splitlines()


def _balanced(line: str) -> bool:
    try:
        shlex.split(line)
    except ValueError:
        return False
    return True


# A command that changes the cluster or the node (deletes, restarts, drains, reinstalls,
# relabels): never the first step of a finding whose cause is only likely.
_DESTRUCTIVE = re.compile(
    r"^(?:sudo\s+)?(?:"
    r"kubectl\s+(?:-n\s+\S+\s+)?(?:delete|drain|cordon|uncordon|replace|patch|apply|edit|"
    r"label|annotate|taint|scale|set|rollout\s+(?:restart|undo))\b"
    r"|helm\s+(?:upgrade|uninstall|rollback|install|delete)\b"
    r"|systemctl\s+(?:restart|stop|disable|mask|reload|kill)\b"
    r"|(?:reboot|shutdown|poweroff|halt|rmmod|kill|pkill|killall)\b"
    r"|modprobe\s+(?:-r|--remove)\b|rm\s|mv\s|dkms\s+(?:remove|install|build)\b"
    r"|(?:apt|apt-get|dnf|yum|zypper)\s+(?:-y\s+)?(?:remove|purge|install|upgrade|erase)\b"
    r"|nvidia-smi\s+.*(?:-r\b|--gpu-reset|-mig\s|--multi-instance-gpu)"
    r"|mokutil\s+--(?:import|disable-validation)|update-initramfs|nvidia-ctk\s+runtime\s+configure"
    r"|ctr\s+.*\b(?:rm|delete)\b|crictl\s+(?:rm|rmp|stop|stopp)\b|echo\s.*>\s*/sys/)"
)


def is_destructive(line: str) -> bool:
    """Whether a remediation line is a command that changes the cluster or a node."""
    return bool(_DESTRUCTIVE.match(line.strip()))


def opens_destructively(remediation: str) -> str | None:
    """The destructive command a remediation opens with, if any: the first line that is
    neither a comment, blank, nor prose is checked (a read-first command before it makes
    the remediation safe to start)."""
    for line in remediation.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if is_destructive(stripped):
            return stripped
        if re.match(r"[a-z/.]", stripped):
            return None  # a read-first command comes first
    return None
