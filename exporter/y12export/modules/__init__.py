"""The table of module readers: one entry per Ultralytics module family the exporter understands.

Each family lives in its own file and says how to read itself from a checkpoint's module record:
`read(tree, rec, path, cin) -> (layer entry, output channels)`, where `tree` is the pt_arch.ModelTree
being filled (its conv helpers check and store the weights), `rec` the layer's pt_reader.Record,
`path` its state-dict prefix ("model.6") and `cin` the channel counts of the layers it reads. The
entry is the layer's object in docs/model-format.md, with "type" set. `check_yaml`, where a family has
one, cross-checks the family's own yaml arguments (see pt_arch.check_against_yaml).

Adding a family: one file here with its reader, one row below, and the builder's side in src/graph/modules
(docs/architecture.md, "A module").
"""

from typing import Callable, NamedTuple, Optional

from . import a2c2f, c2f, c2psa, concat, conv, detect, sppf, upsample


class Reader(NamedTuple):
    read: Callable                       # read(tree, rec, path, cin) -> (entry, output channels)
    many_inputs: bool = False            # reads several layers (Concat, the head) or exactly one
    head: bool = False                   # a head: the last layer, and the last layer is one
    yaml_channels: bool = False          # the yaml row's args[0] is the output width (width-scaled)
    yaml_repeats: bool = False           # the yaml row's n is a repeat count (depth-scaled)
    check_yaml: Optional[Callable] = None  # check_yaml(args, layer entry, scale, warn)


# Module class name (without its Python module) -> its reader.
READERS = {
    "Conv": Reader(conv.read, yaml_channels=True, check_yaml=conv.check_yaml),
    "DWConv": Reader(conv.read, yaml_channels=True),
    "C2f": Reader(c2f.read_c2f, yaml_channels=True, yaml_repeats=True),
    "C3k2": Reader(c2f.read_c3k2, yaml_channels=True, yaml_repeats=True, check_yaml=c2f.check_yaml_c3k2),
    "A2C2f": Reader(a2c2f.read, yaml_channels=True, yaml_repeats=True, check_yaml=a2c2f.check_yaml),
    "SPPF": Reader(sppf.read, yaml_channels=True),
    "C2PSA": Reader(c2psa.read, yaml_channels=True, yaml_repeats=True),
    "Upsample": Reader(upsample.read),
    "Concat": Reader(concat.read, many_inputs=True),
    "Detect": Reader(detect.read, many_inputs=True, head=True),
}

# Heads of other tasks (or detection heads of other designs), refused by name.
OTHER_HEADS = ("Segment", "Pose", "OBB", "Classify", "WorldDetect", "RTDETRDecoder", "v10Detect",
               "YOLOEDetect", "YOLOESegment", "Segment26", "Pose26", "OBB26")


def supported():
    """The supported module types, for error messages: "A2C2f, C2PSA, ..."."""
    return ", ".join(sorted(READERS))
