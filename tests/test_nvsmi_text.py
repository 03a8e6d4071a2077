"""``nvidia-smi -q`` text read by bundle.nvsmi_text into the structures of the XML.

The outputs are the real ones of tests/fixtures/real/smi/text (see SOURCES.md there);
values asserted were read from those files by hand. Edited copies say what was edited.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bundle import nvsmi_health as health
from bundle import nvsmi_text
from bundle.flatxml import FlatElement
from bundle.nvsmi import parse_nvidia_smi
from bundle.nvsmi_text import (
    BANNER,
    MAX_DEPTH,
    MAX_LINES,
    TextProblem,
    looks_like_text,
    parse_nvidia_smi_text,
)

REAL = Path(__file__).resolve().parent / "fixtures" / "real" / "smi"
A10 = REAL / "text" / "a10_r550.txt"
AZURE = REAL / "text" / "a100-sxm4-40gb-x8_r460.txt"


def a10_text() -> str:
    return A10.read_text()


def edited(text: str, *changes: tuple[str, str]) -> bytes:
    """``text`` with each (old line, new line) replaced once; the old line must exist."""
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text.encode()


# -------------------------------------------------------------------- recognising text


def test_both_real_text_outputs_are_recognised_and_no_xml_is() -> None:
    assert looks_like_text(A10.read_bytes()) and looks_like_text(AZURE.read_bytes())
    assert not any(looks_like_text(p.read_bytes()) for p in (REAL / "xml").glob("*.xml"))
    assert looks_like_text(b"\xef\xbb\xbf\r\n" + BANNER.encode() + b"\r\n")
    assert not looks_like_text(b"")


def test_xml_given_to_the_text_parser_is_a_problem_that_names_the_line() -> None:
    data = (REAL / "xml" / "tesla-t4_r515.xml").read_bytes()
    with pytest.raises(TextProblem) as raised:
        parse_nvidia_smi_text(data)
    assert str(raised.value) == f"not nvidia-smi -q text: the first line is not {BANNER}"
    assert raised.value.where == "line 1, column 1"


def test_empty_input_is_a_problem() -> None:
    with pytest.raises(TextProblem):
        parse_nvidia_smi_text(b"\n\n")


# ------------------------------------------------------------------ R550, one A10 GPU


def test_a10_r550_gives_the_gpu_facts_the_xml_would() -> None:
    smi = parse_nvidia_smi_text(A10.read_bytes())
    assert (smi.driver_version, smi.cuda_version) == ("550.127.05", "12.4")
    [gpu] = smi.gpus
    assert (gpu.bus_id, gpu.uuid, gpu.product_name, gpu.product_brand) == (
        "00000000:06:00.0", "GPU-51ae0086-e1ac-4a20-f062-9caa44e4df6d", "NVIDIA A10", "NVIDIA")
    assert (gpu.minor_number, gpu.fb_total_mib, gpu.fb_used_mib, gpu.gpu_util_percent) == (
        0, 23028, 1, 0)
    assert gpu.processes == ()


def test_a10_r550_health_readings_sit_at_the_xml_paths() -> None:
    element = parse_nvidia_smi_text(A10.read_bytes()).gpus[0].element
    read = element.findtext
    assert [read(f"remapped_rows/{tag}") for tag in (
        "remapped_row_corr", "remapped_row_unc", "remapped_row_pending",
        "remapped_row_failure")] == ["0", "0", "No", "No"]
    assert read("remapped_rows/row_remapper_histogram/row_remapper_histogram_max") == (
        "192 bank(s)")
    assert [read(f"ecc_errors/volatile/{tag}") for tag in (
        "sram_correctable", "sram_uncorrectable_parity", "sram_uncorrectable_secded",
        "dram_correctable", "dram_uncorrectable")] == ["0"] * 5
    assert read("ecc_errors/aggregate/sram_threshold_exceeded") == "No"
    assert read("ecc_errors/aggregate_uncorrectable_sram_sources/sram_l2") == "0"
    assert (read("ecc_mode/current_ecc"), read("mig_mode/current_mig")) == ("Enabled", "N/A")
    assert (read("gpu_reset_status/reset_required"),
            read("gpu_reset_status/drain_and_reset_recommended")) == ("No", "No")
    assert (read("pci/pci_bus_id"), read("pci/pci_device_id")) == (
        "00000000:06:00.0", "0x223610DE")
    assert read("pci/pci_gpu_link_info/pcie_gen/max_link_gen") == "4"
    assert read("clocks_event_reasons/clocks_event_reason_gpu_idle") == "Active"
    assert read("clocks_event_reasons/clocks_event_reason_hw_power_brake_slowdown") == (
        "Not Active")
    assert (read("fabric/state"), read("fabric/cliqueId")) == ("N/A", "N/A")
    assert health.power(element) == ("21.30 W", "150.00 W")
    assert health.temperature(element) == "33 C"
    assert health.remapped_rows(element) == health.RowRemap(None, None, None)
    assert health.ecc_uncorrectable(element, "volatile") == []
    assert health.active_slowdowns(element) == []
    assert health.fabric(element).healthy


def test_remapped_rows_pending_and_ecc_in_text_are_not_lost() -> None:
    """The issue's case: the real A10 output with its remap and ECC lines edited to
    trouble, read the way nvsmi_health reads the XML."""
    data = edited(
        a10_text(),
        ("        Pending                           : No\n        Remapping",
         "        Pending                           : Yes\n        Remapping"),
        ("        Remapping Failure Occurred        : No",
         "        Remapping Failure Occurred        : Yes"),
        ("        Uncorrectable Error               : 0",
         "        Uncorrectable Error               : 3"),
        ("            DRAM Uncorrectable            : 0\n        Aggregate",
         "            DRAM Uncorrectable            : 2\n        Aggregate"),
        ("            SRAM Threshold Exceeded       : No",
         "            SRAM Threshold Exceeded       : Yes"),
        ("        Reset Required                    : No",
         "        Reset Required                    : Yes"),
        ("            HW Thermal Slowdown           : Not Active",
         "            HW Thermal Slowdown           : Active"),
    )
    element = parse_nvidia_smi_text(data).gpus[0].element
    rows = health.remapped_rows(element)
    assert rows.pending == health.Reading("remapped_rows/remapped_row_pending", "Yes")
    assert rows.failure == health.Reading("remapped_rows/remapped_row_failure", "Yes")
    assert rows.uncorrectable_rows == health.Reading("remapped_rows/remapped_row_unc", "3")
    assert health.ecc_uncorrectable(element, "volatile") == [
        health.Reading("ecc_errors/volatile/dram_uncorrectable", "2")]
    assert health.ecc_uncorrectable(element, "aggregate") == []
    assert health.sram_threshold_exceeded(element) == health.Reading(
        "ecc_errors/aggregate/sram_threshold_exceeded", "Yes")
    assert health.recovery(element) == [
        health.Reading("gpu_reset_status/reset_required", "Yes")]
    assert health.active_slowdowns(element) == [("hw_thermal_slowdown", health.Reading(
        "clocks_event_reasons/clocks_event_reason_hw_thermal_slowdown", "Active"))]


# -------------------------------------------------------------- R460, eight A100 GPUs


AZURE_GPUS = [  # bus id, UUID, minor number: read from the file
    ("00000001:00:00.0", "GPU-b01e9f90-c60c-4ad1-2052-154833662357", 0),
    ("00000002:00:00.0", "GPU-fccd4a78-556b-7b41-320b-f2a10438c176", 1),
    ("00000003:00:00.0", "GPU-0b64e86a-a39a-9261-7e62-798d98e599af", 2),
    ("00000004:00:00.0", "GPU-e58a4615-3aae-089b-9161-2c78eb0bf227", 3),
    ("0000000B:00:00.0", "GPU-bf404e05-68b6-34c1-386f-94eda8a08cd7", 4),
    ("0000000C:00:00.0", "GPU-083904c0-9140-4a80-ae74-4c2682d585b3", 5),
    ("0000000D:00:00.0", "GPU-2d82fc40-f4a8-9df4-effd-d6f6f22c88d8", 6),
    ("0000000E:00:00.0", "GPU-1291f09c-b6e3-8fb1-6879-89b8b8a9dbc6", 7),
]


def test_eight_a100_r460_gpus_in_order_with_their_ids() -> None:
    smi = parse_nvidia_smi_text(AZURE.read_bytes())
    assert (smi.driver_version, smi.cuda_version) == ("460.32.03", "11.2")
    assert [(g.bus_id, g.uuid, g.minor_number) for g in smi.gpus] == AZURE_GPUS
    assert {(g.product_name, g.product_brand, g.fb_total_mib, g.fb_used_mib)
            for g in smi.gpus} == {("A100-SXM4-40GB", "Tesla", 40536, 0)}
    assert [g.element.findtext("pci/pci_bus_id") for g in smi.gpus] == [
        bus for bus, _, _ in AZURE_GPUS]


def test_r460_older_labels_map_to_the_older_xml_names() -> None:
    """R460 prints 'Clocks Throttle Reasons', 'Ecc Mode' and 'Power Readings'."""
    gpus = parse_nvidia_smi_text(AZURE.read_bytes()).gpus
    first = gpus[0].element
    assert first.findtext("clocks_throttle_reasons/clocks_throttle_reason_gpu_idle") == (
        "Active")
    assert first.find("clocks_event_reasons") is None
    assert first.findtext("ecc_mode/current_ecc") == "Enabled"
    assert first.findtext("power_readings/power_limit") == "400.00 W"
    assert [health.power(g.element) for g in gpus] == [
        (draw, "400.00 W") for draw in ("55.63 W", "56.96 W", "56.35 W", "56.14 W",
                                        "57.46 W", "55.03 W", "55.41 W", "55.47 W")]
    assert [health.temperature(g.element) for g in gpus] == [
        "41 C", "40 C", "40 C", "41 C", "39 C", "38 C", "39 C", "40 C"]
    assert {g.element.findtext("remapped_rows/remapped_row_pending") for g in gpus} == {"No"}
    assert {g.element.findtext("retired_pages/pending_blacklist") for g in gpus} == {"N/A"}


# ------------------------------------------------------------ shapes the corpus lacks


def test_processes_become_one_process_info_each() -> None:
    """The A10 output with its 'Processes : None' line replaced by two process blocks
    in the layout R550 prints (labels as in the driver's text report)."""
    block = "    Processes\n" + "".join(
        "        GPU instance ID                   : N/A\n"
        "        Compute instance ID               : N/A\n"
        f"        Process ID                        : {pid}\n"
        "        Type                              : C\n"
        f"        Name                              : {name}\n"
        f"        Used GPU Memory                   : {mib} MiB\n"
        for pid, name, mib in ((675, "/usr/lib/xorg/Xorg", 22), (5762, "python", 1005)))
    data = edited(a10_text(), ("    Processes                             : None\n", block))
    [gpu] = parse_nvidia_smi_text(data).gpus
    assert [(p.pid, p.name, p.used_memory_mib) for p in gpu.processes] == [
        (675, "/usr/lib/xorg/Xorg", 22), (5762, "python", 1005)]


def test_legacy_ecc_blocks_read_through_the_legacy_xml_paths() -> None:
    """Pre-Ampere ECC as the text report nests it (Single Bit / Double Bit per scope)."""
    legacy = "".join(
        f"        {scope}\n"
        + "".join(f"            {kind}\n"
                  + "".join(f"                {label:<28}: {value}\n" for label, value in (
                      ("Device Memory", 0), ("Register File", 0), ("L1 Cache", 0),
                      ("L2 Cache", 0), ("Texture Memory", "N/A"), ("Texture Shared", "N/A"),
                      ("CBU", "N/A"), ("Total", total)))
                  for kind, total in (("Single Bit", 5), ("Double Bit", dbe)))
        for scope, dbe in (("Volatile", 1), ("Aggregate", 4)))
    text = a10_text()
    start = text.index("    ECC Errors\n") + len("    ECC Errors\n")
    end = text.index("    Retired Pages\n")
    element = parse_nvidia_smi_text((text[:start] + legacy + text[end:]).encode()) \
        .gpus[0].element
    assert element.findtext("ecc_errors/volatile/single_bit/texture_shm") == "N/A"
    assert health.ecc_uncorrectable(element, "volatile") == [
        health.Reading("ecc_errors/volatile/double_bit/total", "1")]
    assert health.ecc_uncorrectable(element, "aggregate") == [
        health.Reading("ecc_errors/aggregate/double_bit/total", "4")]


def test_a_repeated_report_is_read_once() -> None:
    """'nvidia-smi -q -l 5' appends the whole report again each time."""
    later = a10_text().replace("Wed Jan 22 04:28:41 2025", "Wed Jan 22 04:28:46 2025")
    smi = parse_nvidia_smi_text((a10_text() + later).encode())
    assert [gpu.bus_id for gpu in smi.gpus] == ["00000000:06:00.0"]
    assert smi.driver_version == "550.127.05"


# ------------------------------------------------------------------- hostile shapes


def test_nesting_deeper_than_real_output_is_kept_at_the_depth_limit() -> None:
    deep = "".join(f"{' ' * (4 * level)}Level {level}\n" for level in range(1, 300))
    data = (a10_text() + deep).encode()
    smi = parse_nvidia_smi_text(data)
    [gpu] = smi.gpus
    assert gpu.uuid == "GPU-51ae0086-e1ac-4a20-f062-9caa44e4df6d"
    # The outline keeps MAX_DEPTH levels: the GPU, then 'Level 1' to 'Level 11' nested;
    # every deeper line is attached below the last kept level, as siblings.
    kept = "/".join(f"level_{n}" for n in range(1, MAX_DEPTH))
    last = gpu.element.find(kept)
    assert last is not None
    assert [child.tag for child in last] == [f"level_{n}" for n in range(MAX_DEPTH, 300)]
    assert gpu.element.find(f"{kept}/level_{MAX_DEPTH}/level_{MAX_DEPTH + 1}") is None


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r", "\x1c"])
def test_more_lines_than_the_limit_are_refused_with_the_limit_named(newline: str) -> None:
    text = a10_text().replace("\n", newline)
    lines = text.count(newline)
    data = (text + f"    Label : v{newline}" * (MAX_LINES + 1 - lines)).encode()
    with pytest.raises(TextProblem) as raised:
        parse_nvidia_smi_text(data)
    assert str(raised.value) == (
        "nvidia-smi -q text of more than 200,000 lines is not read "
        "(the limit of bundle.nvsmi_text)")
    assert raised.value.where == "line 200001, column 1"


def test_a_text_of_exactly_the_limit_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvsmi_text, "MAX_LINES", 400)  # the full limit reads for seconds
    text = a10_text()
    data = (text + "    Label : v\n" * (400 - text.count("\n"))).encode()
    assert len(parse_nvidia_smi_text(data).gpus) == 1
    with pytest.raises(TextProblem, match="more than 400 lines"):
        parse_nvidia_smi_text(data + b"    Label : v\n")


def test_control_characters_long_lines_and_crlf_do_not_break_the_xml() -> None:
    text = a10_text().replace("\n", "\r\n").replace(
        "NVIDIA A10\r\n", "NVIDIA A10\x01\x1f\r\n")
    data = text.encode() + b"    " + b"x" * 200_000 + b" : " + b"y" * 200_000 + b"\r\n"
    [gpu] = parse_nvidia_smi_text(data).gpus
    assert gpu.product_name == "NVIDIA A10"
    assert gpu.element.findtext("x" * 64) == "y" * 200_000


def test_markup_in_values_stays_text() -> None:
    data = edited(a10_text(), ("    Product Name                          : NVIDIA A10",
                               "    Product Name                          : <b>&amp;</b>"))
    assert parse_nvidia_smi_text(data).gpus[0].product_name == "<b>&amp;</b>"


def test_the_xml_parser_still_refuses_text() -> None:
    """The reader's current behaviour, which the wiring of nvsmi_text changes."""
    with pytest.raises(ValueError, match="invalid XML"):
        parse_nvidia_smi(A10.read_bytes())


# ------------------------------------------------------------- the XML's own names


def _element_paths(element: FlatElement) -> set[str]:
    found: set[str] = set()
    pending = [(element, "")]
    while pending:
        parent, prefix = pending.pop()
        for child in parent:
            path = f"{prefix}/{child.tag}" if prefix else child.tag
            found.add(path)
            pending.append((child, path))
    return found


def test_every_path_read_from_text_is_one_the_real_xml_outputs_print() -> None:
    """The text outputs are of other machines than the XML ones, but the schema is one:
    each element path the text gives a GPU appears in some real XML of the corpus. The
    only exception is R550's 'GPU Memory Power Readings / Power Draw', which the R590
    XML prints as average/instant draw instead."""
    xml_paths: set[str] = set()
    for path in (REAL / "xml").glob("*.xml"):
        for gpu in parse_nvidia_smi(path.read_bytes()).gpus:
            xml_paths |= _element_paths(gpu.element)
    unknown = {text.name: sorted(_element_paths(gpu.element) - xml_paths)
               for text in (A10, AZURE) for gpu in parse_nvidia_smi_text(text.read_bytes()).gpus}
    assert unknown == {A10.name: ["gpu_memory_power_readings/power_draw"], AZURE.name: []}
