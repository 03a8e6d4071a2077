"""Fake kubectl for the collector tests.

Serves recorded cluster objects from $FAKE_DIR/cluster/<resource>.json, appends every argv to
$FAKE_LOG (one JSON line each), and keeps the debug pods it "creates" in $FAKE_STATE so the tests
can check that the collector deletes them. `kubectl debug node/N ... -- chroot /host CMD...` runs
CMD for real with GPU_TRIAGE_HOST_ROOT set to the node's fake root directory, so node.sh runs
against a directory standing in for the node's /.

Behaviour switches come from the JSON file $FAKE_SCENARIO:
  forbidden:   [resource, ...]          RBAC error for `get <resource>`
  missing:     [resource, ...]          "the server doesn't have a resource type"
  no_server:   true                     `version` cannot reach the API server
  debug_fail:  {node: message}          the debug pod is created, then kubectl fails
  debug_sleep: {node: seconds}          the debug pod is created, then kubectl hangs
  log_sleep:   {"ns/pod/container": seconds}
  log_lines:   {"ns/pod/container": n}  (default 3)
  node_roots:  {node: directory}
"""

import fcntl
import json
import os
import random
import string
import subprocess
import sys
import time


def log_invocation(tool, argv):
    line = json.dumps({"tool": tool, "argv": argv}) + "\n"
    fd = os.open(os.environ["FAKE_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def scenario():
    path = os.environ.get("FAKE_SCENARIO")
    if path and os.path.exists(path):
        with open(path) as handle:
            return json.load(handle)
    return {}


class State:
    """Debug pods created so far, shared between concurrent fake kubectl processes."""

    def __init__(self):
        self.path = os.path.join(os.environ["FAKE_STATE"], "debug-pods.json")

    def __enter__(self):
        self.lock = open(self.path + ".lock", "a")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        self.pods = json.load(open(self.path)) if os.path.exists(self.path) else {}
        return self

    def __exit__(self, *exc):
        with open(self.path + ".new", "w") as handle:
            json.dump(self.pods, handle)
        os.replace(self.path + ".new", self.path)  # readers without the lock see whole files
        fcntl.flock(self.lock, fcntl.LOCK_UN)
        self.lock.close()


def fail(message, code=1):
    sys.stderr.write(message + "\n")
    sys.exit(code)


VALUE_FLAGS = {
    "-n": "n",
    "--namespace": "n",
    "-l": "l",
    "--selector": "l",
    "-o": "o",
    "--output": "o",
    "-c": "c",
    "--container": "c",
    "--context": "context",
    "--kubeconfig": "kubeconfig",
}


def parse(args):
    """Flags, positional arguments and the words after `--` of a kubectl command line."""
    flags, positional = {}, []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return flags, positional, args[i + 1 :]
        if arg in VALUE_FLAGS:
            flags[VALUE_FLAGS[arg]] = args[i + 1]
            i += 1
        elif arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            flags[key] = value
        elif arg.startswith("-"):
            flags[arg.lstrip("-")] = True
        else:
            positional.append(arg)
        i += 1
    return flags, positional, []


def load_list(resource):
    path = os.path.join(os.environ["FAKE_DIR"], "cluster", resource + ".json")
    with open(path) as handle:
        return json.load(handle)


def select(items, flags):
    if "n" in flags:
        items = [i for i in items if i.get("metadata", {}).get("namespace") == flags["n"]]
    if "l" in flags:
        key, _, value = flags["l"].partition("=")
        items = [i for i in items if (i.get("metadata", {}).get("labels") or {}).get(key) == value]
    return items


def cmd_version(sc):
    client = {"clientVersion": {"major": "1", "minor": "37", "gitVersion": "v1.37.0"}}
    if sc.get("no_server"):
        print(json.dumps(client))
        fail("The connection to the server 10.0.1.10:6443 was refused - did you specify the right "
             "host or port?")  # fmt: skip
    client.update(load_list("version"))
    print(json.dumps(client))


def cmd_get(sc, flags, positional):
    resource = positional[0]
    if resource in sc.get("forbidden", []):
        fail(
            f'Error from server (Forbidden): {resource} is forbidden: User "support@example.com" '
            f'cannot list resource "{resource}" in API group "" at the cluster scope'
        )
    if resource in sc.get("missing", []):
        fail('error: the server doesn\'t have a resource type "{}"'.format(resource.split(".")[0]))
    items = select(load_list(resource)["items"], flags)
    if resource == "pods":
        with State() as state:
            items += select(list(state.pods.values()), flags)
    print(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "metadata": {"resourceVersion": ""},
                "items": items,
            },
            indent=4,
        )
    )


def cmd_logs(sc, flags, positional):
    ns, pod, container = flags["n"], positional[0], flags["c"]
    key = f"{ns}/{pod}/{container}"
    if key in sc.get("log_sleep", {}):
        time.sleep(sc["log_sleep"][key])
    kind = "previous" if flags.get("previous") else "current"
    lines = sc.get("log_lines", {}).get(key, 3)
    tail = int(flags.get("tail", -1))
    first = max(0, lines - tail) if tail >= 0 else 0
    for i in range(first, lines):
        stamp = f"2026-11-29T09:{i // 60 % 60:02d}:{i % 60:02d}.{i:09d}Z"
        what = f"{pod}/{container} ({kind} instance)"
        print(f"{stamp} {what}: reconciling node gpu-a at 10.0.1.11, line {i}")


def cmd_debug(sc, flags, positional, rest):
    node = positional[0].split("/", 1)[1]
    suffix = "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
    name = f"node-debugger-{node}-{suffix}"
    ns = flags.get("n", "default")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-11-29T10:00:00Z"},
        "spec": {
            "nodeName": node,
            "hostPID": True,
            "hostNetwork": True,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "debugger",
                    "image": flags.get("image"),
                    "command": rest,
                    "stdin": True,
                    "tty": False,
                }
            ],
        },
        "status": {"phase": "Running"},
    }
    with State() as state:
        state.pods[name] = pod
    sys.stdout.write(f"Creating debugging pod {name} with container debugger on node {node}.\n")
    sys.stdout.flush()
    if node in sc.get("debug_sleep", {}):
        time.sleep(sc["debug_sleep"][node])
    if node in sc.get("debug_fail", {}):
        fail(sc["debug_fail"][node])
    root = sc.get("node_roots", {}).get(node)
    if not root:
        fail('error: unable to upgrade connection: container not found ("debugger")')
    if rest[:2] != ["chroot", "/host"]:
        fail(f"fake kubectl: expected -- chroot /host ..., got {rest!r}")
    env = dict(
        os.environ,
        GPU_TRIAGE_HOST_ROOT=root,
        PATH=os.pathsep.join(
            [os.path.join(root, "fake", "bin"), os.environ["FAKE_NODEBIN"], os.environ["PATH"]]
        ),
    )
    sys.exit(subprocess.call(rest[2:], env=env))


def cmd_delete(flags, positional):
    kind, name = positional[0], positional[1]
    if kind != "pod":
        fail(f"fake kubectl: refusing to delete {kind}")
    with State() as state:
        found = state.pods.pop(name, None)
    if found is None and not flags.get("ignore-not-found"):
        fail(f'Error from server (NotFound): pods "{name}" not found')
    print(f'pod "{name}" deleted')


def cmd_can_i(sc, words):
    """`auth can-i VERB RESOURCE`: "yes", or "no" (exit 1) for scenario "cannot" entries."""
    if " ".join(words[:2]) in sc.get("cannot", []):
        print("no")
        sys.exit(1)
    print("yes")


def main():
    argv = sys.argv[1:]
    log_invocation("kubectl", argv)
    sc = scenario()
    verb = argv[0] if argv else ""
    flags, positional, rest = parse(argv[1:])
    if verb == "version":
        cmd_version(sc)
    elif verb == "get":
        cmd_get(sc, flags, positional)
    elif verb == "logs":
        cmd_logs(sc, flags, positional)
    elif verb == "debug":
        cmd_debug(sc, flags, positional, rest)
    elif verb == "delete":
        cmd_delete(flags, positional)
    elif verb == "auth" and positional[:1] == ["can-i"]:
        cmd_can_i(sc, positional[1:])
    else:
        fail(f"fake kubectl: unsupported verb {verb!r}")


if __name__ == "__main__":
    main()
