from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.usage.analysis.thresholds import DEFAULTS, GiB, load_thresholds


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "usage.toml"
    path.write_text(text)
    return path


def test_no_file_means_the_documented_defaults() -> None:
    assert load_thresholds(None) == DEFAULTS
    assert (DEFAULTS.cpu_efficiency_min, DEFAULTS.min_samples) == (0.8, 10)


def test_the_file_overrides_the_keys_it_names(tmp_path: Path) -> None:
    loaded = load_thresholds(write(tmp_path, "[thresholds]\ncpu_efficiency_min = 0.65\n"
                                             f"memory_unused_min_bytes = {4 * GiB}\n"
                                             "threads_per_cpu_max = 3\n"))
    assert loaded.cpu_efficiency_min == 0.65 and loaded.memory_unused_min_bytes == 4 * GiB
    assert loaded.threads_per_cpu_max == 3 and loaded.min_samples == DEFAULTS.min_samples


@pytest.mark.parametrize(("text", "complaint"), [
    ("[thresholds]\ncpu_efficiency_min = 80\n",
     "thresholds.cpu_efficiency_min is a fraction from 0 to 1 (write 0.8 for 80 %, not 80)"),
    ("[thresholds]\ncpu_eficiency_min = 0.8\n", "unknown key thresholds.cpu_eficiency_min"),
    ("[thresholds]\nmin_samples = 2.5\n", "thresholds.min_samples must be an integer"),
    ("[thresholds]\nmin_samples = 0\n", "thresholds.min_samples must be at least 1"),
    ("[thresholds]\nburst_ratio_min = true\n", "thresholds.burst_ratio_min must be a number"),
    ("[thresholds]\nburst_ratio_min = '0.5'\n", "thresholds.burst_ratio_min must be a number"),
    ("[thresholds]\nmany_files_min = -1\n", "thresholds.many_files_min must not be negative"),
    ("[thresholds]\ngpu_utilization_min = nan\n", "gpu_utilization_min must not be negative"),
    ("cpu_efficiency_min = 0.8\n", "unknown table or key 'cpu_efficiency_min'"),
    ("thresholds = 3\n", "thresholds must be a table"),
    ("[thresholds\n", "not valid TOML"),
])
def test_a_bad_value_is_one_configuration_error_naming_the_key(
        tmp_path: Path, text: str, complaint: str) -> None:
    with pytest.raises(ConfigError) as failure:
        load_thresholds(write(tmp_path, text))
    assert complaint in str(failure.value)
    assert "\n" not in str(failure.value)


def test_a_missing_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_thresholds(tmp_path / "absent.toml")
