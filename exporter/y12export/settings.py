"""The yolo12 settings file, where the exporter records the default model for `yolo12-infer`.

The folder is $YOLO12_CONFIG_DIR if set, else $XDG_CONFIG_HOME/yolo12 if XDG_CONFIG_HOME is set, else
$HOME/.config/yolo12; the file is `settings.json` in it, a JSON object whose key "model" holds the
absolute path of a .y12 file (docs/cli.md says how the CLI looks for its model). Other keys are kept
when the file is rewritten; the rewrite is atomic (a temporary file in the same folder, renamed).
"""

import json
import os
import tempfile

from .errors import ExportError

MAX_SETTINGS_BYTES = 1 << 20  # a settings file is a few lines


def config_dir(env=None):
    """The yolo12 config folder, or None when neither of the variables nor HOME is set."""
    env = os.environ if env is None else env
    if env.get("YOLO12_CONFIG_DIR"):
        return env["YOLO12_CONFIG_DIR"]
    if env.get("XDG_CONFIG_HOME"):
        return os.path.join(env["XDG_CONFIG_HOME"], "yolo12")
    if env.get("HOME"):
        return os.path.join(env["HOME"], ".config", "yolo12")
    return None


def settings_path(env=None):
    folder = config_dir(env)
    return None if folder is None else os.path.join(folder, "settings.json")


def _read(path):
    """The settings object in `path` ({} when there is no file). A file that is not a JSON object is
    an error, never overwritten: it may be the user's own edit."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SETTINGS_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ExportError(f"{path}: cannot read ({e.strerror or e})")
    if len(raw) > MAX_SETTINGS_BYTES:
        raise ExportError(f"{path}: larger than {MAX_SETTINGS_BYTES:,} bytes, not a settings file")
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ExportError(f"{path}: not valid JSON ({str(e)[:60]}); fix or remove it")
    if not isinstance(obj, dict):
        raise ExportError(f"{path}: not a JSON object; fix or remove it")
    return obj


def _mode(path):
    """The permissions to keep: the existing file's, else what the umask gives a new file (mkstemp
    would make it private)."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def record_default_model(model, env=None):
    """Records `model` (made absolute) as the default model; returns the settings file's path.
    Raises ExportError when there is no config folder, or the file is corrupt or cannot be written."""
    path = settings_path(env)
    if path is None:
        raise ExportError("no config folder (none of YOLO12_CONFIG_DIR, XDG_CONFIG_HOME, HOME is set)")
    settings = _read(path)
    settings["model"] = os.path.abspath(model)
    folder = os.path.dirname(path)
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".settings.", suffix=".tmp")
        os.chmod(tmp, _mode(path))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(settings, f, indent=2, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise ExportError(f"{path}: cannot write ({e.strerror or e})")
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.remove(tmp)
    return path
