"""Reading a trainer config: TOML values, overrides, and errors that name the file or the field."""

from __future__ import annotations

import pytest

from trainer.config import ConfigError, load_config, read_toml


def test_file_values_then_overrides(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('steps = 3\nlearning_rate = 1\nformat = "rstar2"\n')
    cfg = load_config(path, steps=5, model=None)
    assert (cfg.steps, cfg.learning_rate, cfg.format, cfg.model) == (5, 1.0, "rstar2", "tiny")


def test_a_missing_file_is_a_config_error_naming_it(tmp_path):
    missing = tmp_path / "missing.toml"
    with pytest.raises(ConfigError, match=f"cannot read trainer config {missing}: No such file"):
        load_config(missing)


def test_bad_toml_is_a_config_error_naming_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("steps = = 3\n")
    with pytest.raises(ConfigError, match=f"run config {path} is not valid TOML"):
        read_toml(path, "run config")


def test_a_value_of_the_wrong_type_names_the_field():
    with pytest.raises(ConfigError, match="steps: expected int"):
        load_config(steps="3")
    assert issubclass(ConfigError, ValueError)
