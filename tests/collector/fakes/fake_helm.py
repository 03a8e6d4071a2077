"""Fake helm for the collector tests: list / history / get values from $FAKE_DIR/helm/*.json.
Every argv is appended to $FAKE_LOG."""

import os
import sys

from fake_kubectl import log_invocation


def option(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


def serve(name):
    path = os.path.join(os.environ["FAKE_DIR"], "helm", name)
    if not os.path.exists(path):
        sys.stderr.write("Error: release: not found\n")
        sys.exit(1)
    with open(path) as handle:
        sys.stdout.write(handle.read())


def main():
    argv = sys.argv[1:]
    log_invocation("helm", argv)
    if argv[0] == "list":
        serve("list.json")
    elif argv[0] == "history":
        serve(f"history-{argv[1]}.json")
    elif argv[:2] == ["get", "values"]:
        serve("values-{}-{}.json".format(argv[2], option(argv, "--revision")))
    else:
        sys.stderr.write(f"fake helm: unsupported {argv!r}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
