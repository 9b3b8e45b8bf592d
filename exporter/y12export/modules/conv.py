"""Conv and DWConv layers: Conv2d + BatchNorm2d (folded) + SiLU or no activation."""

from ..errors import require


def read(tree, rec, path, cin):
    f = tree.conv(rec, path)
    require(f["c1"] == cin[0], f"{path}: conv reads {f['c1']} channels, its input has {cin[0]}")
    return dict(type="Conv", **f), f["c2"]


def check_yaml(args, L, scale, warn):
    """yaml Conv args: [c2, k, s, p, g, ...]: kernel, stride and groups must match the weights."""
    i = L["index"]
    if len(args) >= 3:
        require(args[1] == L["k"] and args[2] == L["s"],
                f"model.{i}: the yaml gives kernel {args[1]} stride {args[2]}, the weights {L['k']}, {L['s']}")
        if len(args) >= 5 and isinstance(args[4], int):
            require(args[4] == L["g"], f"model.{i}: the yaml gives groups {args[4]}, the weights {L['g']}")
