"""Every path of a bundle the analyzer reads, named once.

The bundle format (docs/bundle-format.md) puts cluster-wide files under ``cluster/``,
container logs under ``logs/<namespace>/<pod>/<container>.log`` and what was collected on
a node under ``nodes/<node>/``. Code that reads one of these files names it through this
module, never by a string of its own: a file renamed or added in the format is then
changed in one place, and ``tests/test_layering.py`` finds a quoted bundle path anywhere
else.

Two kinds of names:

- cluster paths (``PODS``, ``NODES`` ...) are relative to the bundle's root;
- node paths (``DMESG``, ``LSPCI`` ...) are relative to ``nodes/<node>/``;
  :func:`node_file` gives the bundle path of one on a given node.

A name ending in ``_DIR`` is a folder (with its trailing ``/``): the files under it.
"""

from __future__ import annotations

# ----------------------------------------------------------------------- the root

MANIFEST = "manifest.json"
CLUSTER_DIR = "cluster/"
NODES_DIR = "nodes/"
LOGS_DIR = "logs/"
LOG_SUFFIX = ".log"
PREVIOUS_LOG_SUFFIX = ".previous.log"

# ------------------------------------------------------------------- cluster files

VERSION = "cluster/version.json"
NODES = "cluster/nodes.json"
PODS = "cluster/pods.json"
EVENTS = "cluster/events.json"
DAEMONSETS = "cluster/daemonsets.json"
DEPLOYMENTS = "cluster/deployments.json"
NAMESPACES = "cluster/namespaces.json"
RUNTIMECLASSES = "cluster/runtimeclasses.json"
RESOURCEQUOTAS = "cluster/resourcequotas.json"
CLUSTERPOLICIES = "cluster/clusterpolicies.json"
NVIDIADRIVERS = "cluster/nvidiadrivers.json"
CONFIGMAPS = "cluster/configmaps.json"
CRDS = "cluster/crds.json"
HELM_DIR = "cluster/helm/"
HELM_RELEASES = "cluster/helm/*.json"

# ---------------------------------------------------- node files (under nodes/<node>/)

DMESG = "dmesg.txt"
NVIDIA_SMI = "nvidia-smi.xml"
RUNTIME_JSON = "runtime.json"
LINKS = "links.txt"

CONTAINERD_DIR = "containerd/"
CONTAINERD_DUMP = "containerd/config-dump.toml"
CONTAINERD_VERSION = "containerd/version.txt"
CONTAINERD_FILES_DIR = "containerd/files/"
CRIO_DIR = "crio/"
CRIO_DUMP = "crio/config-dump.toml"
CRIO_FILES_DIR = "crio/files/"
DOCKER_DAEMON_JSON = "docker/files/etc/docker/daemon.json"
DOCKER_FILES_DIR = "docker/files/"
TOOLKIT_FILES_DIR = "toolkit/files/"
KUBELET_FILES_DIR = "kubelet/files/"
# the node folders whose files/<host path> copy a host file (collector format 1.1)
HOST_FILE_DIRS = (CONTAINERD_FILES_DIR, CRIO_FILES_DIR, DOCKER_FILES_DIR, TOOLKIT_FILES_DIR,
                  KUBELET_FILES_DIR)
SYSTEMD_DIR = "systemd/"
SYSTEMD_CONTAINERD = "systemd/containerd.txt"
JOURNAL_DIR = "journal/"
JOURNALS = "journal/*.jsonl"
CONTAINERD_JOURNAL = "journal/containerd.jsonl"
KUBELET_JOURNAL = "journal/kubelet.jsonl"
FABRIC_MANAGER_JOURNAL = "journal/nvidia-fabricmanager.jsonl"
CDI_DIR = "cdi/"

# the files under a node folder, as input patterns
CONTAINERD_ANY = "containerd/*"
CONTAINERD_FILES = "containerd/files/*"
HOST_FILES_ANY = "*/files/*"
CRIO_ANY = "crio/*"
SYSTEMD_ANY = "systemd/*"
CDI_ANY = "cdi/*"
LOGS_ANY = "logs/*"
EACH_NODE = "nodes/*/"

HOST_DIR = "host/"
UNAME = "host/uname.txt"
OS_RELEASE = "host/os-release"
CMDLINE = "host/cmdline"
MODULES = "host/modules.txt"
SECUREBOOT = "host/secureboot.txt"
NVIDIA_CTK = "host/nvidia-ctk.txt"
UNATTENDED_UPGRADES = "host/unattended-upgrades.txt"
LSPCI = "host/lspci.txt"
CGROUP = "host/cgroup.txt"
DEV_NVIDIA = "host/dev-nvidia.txt"
SELINUX = "host/selinux.txt"
KUBELET_FLAGS = "host/kubelet.txt"
DRIVER_VERSION = "host/nvidia-driver-version.txt"
GPU_PROCESSES = "host/gpu-processes.txt"

# journal units the analyzer names
CONTAINERD_UNIT = "containerd"
KUBELET_UNIT = "kubelet"
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager"


def node_dir(node: str) -> str:
    """``nodes/<node>/``: the folder of what was collected on ``node``."""
    return f"{NODES_DIR}{node}/"


def node_file(node: str, relative: str) -> str:
    """The bundle path of the node path ``relative`` (``LSPCI`` ...) on ``node``."""
    return f"{NODES_DIR}{node}/{relative}"


def any_node(relative: str) -> str:
    """``nodes/*/<relative>``: the node path on every node, as a pattern and in words."""
    return f"{NODES_DIR}*/{relative}"


def containerd_file(host_path: str) -> str:
    """The node path of a copied containerd file, by its host path (``/etc/...``)."""
    return CONTAINERD_FILES_DIR + host_path.lstrip("/")


def crio_file(host_path: str) -> str:
    """The node path of a copied CRI-O file, by its host path (``/etc/...``)."""
    return CRIO_FILES_DIR + host_path.lstrip("/")


def journal(unit: str) -> str:
    """The node path of one systemd unit's journal (``journal/<unit>.jsonl``)."""
    return f"{JOURNAL_DIR}{unit}.jsonl"


def systemd(unit: str) -> str:
    """The node path of ``systemctl show <unit>``'s output (``systemd/<unit>.txt``)."""
    return f"{SYSTEMD_DIR}{unit}.txt"


def host(name: str) -> str:
    """The node path of a host file (``host/<name>``)."""
    return f"{HOST_DIR}{name}"


def logs_of_namespace(namespace: str) -> str:
    """``logs/<namespace>/``: the folder of one namespace's container logs."""
    return f"{LOGS_DIR}{namespace}/"


def helm_release(release: str) -> str:
    """The bundle path of one Helm release's history (``cluster/helm/<release>.json``)."""
    return f"{HELM_DIR}{release}.json"


def pod_logs_dir(namespace: str, pod: str) -> str:
    """``logs/<namespace>/<pod>/``: the folder of one pod's container logs."""
    return f"{LOGS_DIR}{namespace}/{pod}/"


def log_file(namespace: str, pod: str, container: str, *, previous: bool = False) -> str:
    """The bundle path of a container's log (its previous run's with ``previous``)."""
    suffix = PREVIOUS_LOG_SUFFIX if previous else LOG_SUFFIX
    return f"{LOGS_DIR}{namespace}/{pod}/{container}{suffix}"
