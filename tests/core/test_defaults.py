from prhub.config import Settings
from prhub.defaults import DEFAULTS, ENV


def test_each_name_is_a_setting_and_settings_default_to_these() -> None:
    assert set(ENV) <= set(Settings.model_fields)
    for name, value in DEFAULTS.items():
        assert Settings.model_fields[name].default == value, name


def test_every_default_the_help_shows_is_here() -> None:
    from prhub.cli.options import BATCH, SHARED, WEEK

    options = {*SHARED, *WEEK, *BATCH}
    # A setting that is an option and has a default other than "unset" or "off" shows it.
    shown = {n for n, f in Settings.model_fields.items() if n in options and f.default}
    assert shown == set(DEFAULTS)
