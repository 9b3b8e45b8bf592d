"""Upsample layers: nearest-neighbour x2 only."""

from ..errors import require


def read(tree, rec, path, cin):
    sf, mode = rec.state.get("scale_factor"), rec.state.get("mode")
    require(sf in (2, 2.0) and mode == "nearest" and rec.state.get("size") is None,
            f"{path}: Upsample scale {sf} mode {mode} is not supported (only x2 nearest)")
    return dict(type="Upsample", scale=2, mode="nearest"), cin[0]
