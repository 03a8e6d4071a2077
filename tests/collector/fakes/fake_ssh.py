"""Fake ssh for the collector tests: `ssh [opts] HOST CMD...` runs CMD locally against the fake
root directory of HOST ($FAKE_SCENARIO ssh_roots {host: dir}); hosts in ssh_unreachable fail
like a refused connection; hosts in ssh_slow wait that many seconds first. Every argv is
appended to $FAKE_LOG."""

import os
import subprocess
import sys
import time

from fake_kubectl import log_invocation, scenario

OPTIONS_WITH_VALUE = {"-o", "-l", "-p", "-i", "-F", "-J"}


def main():
    argv = sys.argv[1:]
    log_invocation("ssh", argv)
    sc = scenario()
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in OPTIONS_WITH_VALUE else 1
    host, command = argv[i], argv[i + 1 :]
    if host in sc.get("ssh_unreachable", []):
        sys.stderr.write(f"ssh: connect to host {host} port 22: Connection refused\n")
        sys.exit(255)
    time.sleep(sc.get("ssh_slow", {}).get(host, 0))
    root = sc.get("ssh_roots", {}).get(host)
    if root is None:
        sys.stderr.write(f"ssh: Could not resolve hostname {host}: Name or service not known\n")
        sys.exit(255)
    if command[:2] == ["sudo", "-n"]:
        command = command[2:]
    env = dict(
        os.environ,
        GPU_TRIAGE_HOST_ROOT=root,
        PATH=os.pathsep.join(
            [os.path.join(root, "fake", "bin"), os.environ["FAKE_NODEBIN"], os.environ["PATH"]]
        ),
    )
    # A real ssh hands the words to the remote login shell as one string.
    sys.exit(subprocess.call(["sh", "-c", " ".join(command)], env=env))


if __name__ == "__main__":
    main()
