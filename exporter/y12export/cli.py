"""The exporter's command line: `yolo12-export` (installed) or `python3 exporter/export.py`.

Converts an Ultralytics YOLO detection checkpoint (.pt) or ONNX export into a yolo12 model file
(.y12; without -o, beside the input), records it as the default model of `yolo12-infer` (unless
--no-set-default) and prints, as its last line, the command to run next; see docs/exporter.md.
Exit status: 0 on success, 1 with one line on stderr for any input it refuses, 2 for bad usage.
"""

import argparse
import hashlib
import os
import shlex
import shutil
import sys

from y12export import EXPORTER_VERSION
from y12export.errors import ExportError


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _warn(msg):
    print(f"warning: {msg}", file=sys.stderr)


def output_path(src, output=None):
    """Where the .y12 goes: `output`; inside it when it is a folder (existing, or ending in a path
    separator); beside the input (yolo12n.pt -> yolo12n.y12) when there is none."""
    name = os.path.splitext(os.path.basename(src))[0] + ".y12"
    if output is None:
        return os.path.join(os.path.dirname(src), name)
    if output.endswith(("/", os.sep)) or os.path.isdir(output):
        return os.path.join(output, name)
    return output


def export(src, dst, dtype="f32", warn=None, version=None):
    """Converts src (.pt or .onnx) to dst in format `version` (None: the default, see
    format_version()); returns the header written. Raises ExportError."""
    from y12export.writer import write_model

    warn = warn or _warn
    if not os.path.exists(src):
        raise ExportError(f"{src}: no such file")
    if not os.path.isfile(src):
        raise ExportError(f"{src}: not a regular file")
    if os.path.exists(dst) and os.path.samefile(src, dst):
        raise ExportError(f"{src}: the output {dst} is the input itself; choose another -o")
    if os.path.isdir(dst):
        raise ExportError(f"{dst}: is a folder (give the file to write, or a folder ending in /)")
    folder = os.path.dirname(dst)
    try:
        if folder:
            os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise ExportError(f"{folder}: cannot create the output folder ({e.strerror or e})")
    with open(src, "rb") as f:
        head = f.read(4)
    if head[:2] == b"PK" or src.lower().endswith((".pt", ".pth")):
        from y12export.from_pt import read_pt
        header, layers, tensors, fmt, producer = read_pt(src, warn)
    elif src.lower().endswith(".onnx"):
        from y12export.from_onnx import read_onnx
        header, layers, tensors, fmt, producer = read_onnx(src, warn)
    else:
        raise ExportError(f"{src}: neither a PyTorch zip checkpoint (.pt) nor an ONNX model (.onnx)")
    header["dtype"] = dtype
    header["source"] = {"path": os.path.basename(src), "format": fmt, "sha256": _sha256(src),
                        "producer": producer, "exporter": EXPORTER_VERSION}
    header["layers"] = layers
    return write_model(dst, header, tensors, dtype, format_version(version))


def format_version(requested=None):
    """The .y12 format version to write: `requested`, else $Y12EXPORT_FORMAT_VERSION, else the
    writer's default (1 until the C++ loader reads version 2)."""
    from y12export.writer import DEFAULT_FORMAT_VERSION, FORMAT_VERSIONS

    if requested is None:
        env = os.environ.get("Y12EXPORT_FORMAT_VERSION", "").strip()
        if not env:
            return DEFAULT_FORMAT_VERSION
        if env not in [str(v) for v in FORMAT_VERSIONS]:
            raise ExportError(f"Y12EXPORT_FORMAT_VERSION={env[:20]!r} is not one of {list(FORMAT_VERSIONS)}")
        requested = int(env)
    return requested


def infer_command():
    """How to call yolo12-infer from here: on PATH, else the build in this checkout, else the name."""
    if shutil.which("yolo12-infer"):
        return "yolo12-infer"
    built = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "build", "yolo12-infer")
    if os.path.isfile(built) and os.access(built, os.X_OK):
        rel = os.path.relpath(built)
        return rel if not rel.startswith("..") else built
    return "yolo12-infer"


def record_default(dst, enabled):
    """Records dst as the default model where asked; returns whether a bare `yolo12-infer IMAGE` will
    use it, after saying what was done."""
    from y12export.settings import record_default_model

    if not enabled:
        return False
    try:
        where = record_default_model(dst)
    except ExportError as e:
        _warn(f"{e}: the default model was not recorded")
        return False
    print(f"default model: {os.path.abspath(dst)} (recorded in {where})")
    env = os.environ.get("YOLO12_MODEL")
    if env and not (os.path.exists(env) and os.path.samefile(env, dst)):
        _warn(f"YOLO12_MODEL={env} is set and comes before the recorded default")
        return False
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description="Convert an Ultralytics YOLO detection model to a .y12 file.")
    ap.add_argument("input", help="Ultralytics .pt checkpoint or .onnx export")
    ap.add_argument("-o", "--output", help="the .y12 file to write, or a folder for it (default: beside the "
                    "input, yolo12n.pt -> yolo12n.y12); missing folders are created")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--fp32", dest="dtype", action="store_const", const="f32", help="store f32 weights (default)")
    g.add_argument("--fp16", dest="dtype", action="store_const", const="f16", help="store f16 weights")
    ap.set_defaults(dtype="f32")
    ap.add_argument("--format-version", type=int, choices=(1, 2), default=None,
                    help="the .y12 format version: 2 adds a checksum of the whole file (default 1, or "
                    "$Y12EXPORT_FORMAT_VERSION)")
    ap.add_argument("--no-set-default", dest="set_default", action="store_false",
                    help="do not record the model as yolo12-infer's default (settings.json in $YOLO12_CONFIG_DIR, "
                    "else $XDG_CONFIG_HOME/yolo12, else ~/.config/yolo12)")
    args = ap.parse_args(argv)
    try:
        version = format_version(args.format_version)
    except ExportError as e:
        ap.error(str(e))
    dst = output_path(args.input, args.output)
    try:
        h = export(args.input, dst, args.dtype, version=version)
    except ExportError as e:
        msg = str(e)
        if not msg.startswith((args.input, dst)):
            msg = f"{args.input}: {msg}"
        print(f"export.py: error: {msg}", file=sys.stderr)
        return 1
    except RecursionError:
        print(f"export.py: error: {args.input}: structure nested too deeply", file=sys.stderr)
        return 1
    except Exception as e:  # a bug or an input we failed to anticipate: still one line
        if os.environ.get("Y12EXPORT_DEBUG"):
            raise
        print(f"export.py: error: {args.input}: cannot convert ({type(e).__name__}: {e}); "
              "set Y12EXPORT_DEBUG=1 for a traceback", file=sys.stderr)
        return 1
    print(f"{h['family']} scale {h['scale'] or '-'}: {len(h['layers'])} layers, {h['parameters']:,} parameters, "
          f"{h['nc']} classes, {h['dtype']} -> {dst}")
    bare = record_default(dst, args.set_default)
    model = shlex.quote(dst)
    infer = shlex.quote(infer_command())
    sys.stderr.flush()
    if bare:
        print(f"next: {infer} path/to/image.jpg   (model: {model})")
    else:
        print(f"next: {infer} --model {model} path/to/image.jpg")
    return 0
