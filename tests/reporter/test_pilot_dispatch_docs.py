"""docs/reporter.md 'Pilot dispatch and image policy' names what the code recognises: every
kind, switch, marker, attribute, option and default, and the reasons it gives."""

from __future__ import annotations

from pathlib import Path

from clusterwatch.reporter import image_policy, pilot_dispatch
from clusterwatch.reporter.main import build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reporter.md"


def section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    return text[text.index("## Pilot dispatch and image policy"):]


def test_it_names_every_kind_switch_marker_and_attribute() -> None:
    text = section()
    names = ["image_bound", "per_job", "unrestricted", "unknown", "bootstrap_images",
             pilot_dispatch.PER_JOB_SWITCH, pilot_dispatch.CONTAINER_SWITCH,
             pilot_dispatch.POLICY_ATTRIBUTE, pilot_dispatch.FEATURES_VARIABLE,
             pilot_dispatch.OMIT_FILTER, "{customSubmitAttributes}", "{executableFile}",
             "transfer_input_files", "+SingularityImage", "MY.SingularityImage",
             "container_image"]
    names += [marker for marker, _ in pilot_dispatch.ALRB_MARKERS]
    names += [f"`{value}`" for value in pilot_dispatch.SWITCH_ON]
    assert [name for name in names if name not in text] == []


def test_it_states_the_option_its_default_and_the_limits() -> None:
    text = section()
    option = next(action for action in build_parser()._actions
                  if "--image-state-max-age-s" in action.option_strings)
    assert option.default == image_policy.DEFAULT_MAX_AGE_S
    assert f"`--image-state-max-age-s` old (default {option.default}" in text
    assert f"more than {image_policy.CLOCK_SKEW_S} s after" in text
    assert "1 MiB" in text and pilot_dispatch.MAX_TEMPLATE_BYTES == 1 << 20


def test_it_documents_every_state_file_field_the_code_reads() -> None:
    text = section()
    for field in ("policy", "policy_sha256", "status", "updated_at", "images", "state_file",
                  "state_updated_at", "state_age_s"):
        assert f"`{field}`" in text or f'"{field}"' in text, field
