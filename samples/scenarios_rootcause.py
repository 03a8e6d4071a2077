"""Root-cause scenarios: a root cause behind an operator symptom, with its symptoms in the report.

``dcgm-profiling-crashloop``: on gpu-2 the node image runs its own DCGM host engine
(the distribution's datacenter-gpu-manager service), which holds the L40S GPUs'
profiling counters. The operator's DCGM exporter embeds a second DCGM, asks for the
DCP metrics of its default metrics file, gets 'The third-party Profiling module
returned an unrecoverable error' and exits (the log of NVIDIA/dcgm-exporter#148,
the explanation of NVIDIA/dcgm-exporter#7). OP013 is the root; OP001's stage (other
operands) and the ClusterPolicy's state-dcgm-exporter hang under it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from samples.samplekit import oplogs
from samples.samplekit.core import plus
from samples.samplekit.dcgpu import L40S
from samples.samplekit.fleet import (
    Rig,
    RigState,
    add_nodes,
    base_state,
    default_statuses,
    emit,
    fleet_scene,
    gpu_resources,
    install_stack,
    node_writers,
    toolkit_config,
)
from samples.samplekit.podstates import Finished, Looping, Run, crash_runs, custom
from samples.samplekit.scene import LogLine
from samples.scenarios_node import EXPORTER, cluster, healthy_stack, logrus, timeline

# Seconds from the exporter's start to its fatal line (02:47:13 to 02:47:46 in #148).
EXPORTER_RUN_S = 33.4


def exporter_run(start: dt.datetime) -> list[LogLine]:
    """One run of dcgm-exporter 3.x that cannot watch the profiling fields."""
    return [
        logrus(start, "Starting dcgm-exporter"),
        logrus(plus(start, 0.6), "DCGM successfully initialized!"),
        logrus(plus(start, 0.7), "Collecting DCP Metrics"),
        logrus(plus(start, 0.7), "No configmap data specified, falling back to metric file "
                                 "/etc/dcgm-exporter/dcp-metrics-included.csv"),
        logrus(plus(start, 0.8), "Initializing system entities of type: GPU"),
        logrus(plus(start, EXPORTER_RUN_S), "Failed to watch metrics: Error watching fields: "
                                            "The third-party Profiling module returned an "
                                            "unrecoverable error", level="fatal"),
    ]


def dcgm_profiling_crashloop(root: Path) -> None:
    """See the module docstring."""
    t = timeline("2026-11-30T09:15:00Z")
    machine = "PowerEdge R760xa"
    rigs = cluster(t, [("gpu-1", L40S, 2, machine, "Intel"), ("gpu-2", L40S, 2, machine, "Intel")])
    broken: Rig = rigs[2]
    scene = fleet_scene(rigs, t)
    until = plus(t.created, -4.1)
    # The host engine came with a node image update applied (and the pod restarted) 7 h ago.
    box = plus(t.created, -7 * 3600 - 412.6)
    check = Run(plus(box, 0.9), plus(box, 1.6))
    runs = crash_runs(plus(check.end, 1.2), until, EXPORTER_RUN_S)
    exporter = custom(plus(box, -0.4), box,
                      {"toolkit-validation": Finished(check),
                       EXPORTER: Looping(runs, plus(until, -11.8))},
                      logs={EXPORTER: exporter_run(runs[-1].start)},
                      previous={EXPORTER: exporter_run(runs[-2].start)})
    stack = healthy_stack(t, rigs)
    statuses = default_statuses() | {"state-dcgm-exporter": "notReady"}
    hosts = [r.host for r in rigs]
    stack.operator_log = [line for line in stack.operator_log if line.at < box]
    stack.operator_log += oplogs.reconcile(plus(box, 61.2), hosts, statuses)
    stack.operator_log += oplogs.reconcile(plus(t.created, -187.9), hosts, statuses)
    stack.outcomes = {EXPORTER: {broken.name: exporter}}
    stack.ready = False
    stack.not_ready = ["state-dcgm-exporter"]
    stack.since = plus(box, 61.3)
    install_stack(scene, rigs, t, stack)
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs))
    files = toolkit_config()

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        return base_state(scene, rig, files)

    node_writers(scene, rigs, state)
    emit(scene, root, "metrics-lab")
