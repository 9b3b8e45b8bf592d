"""Concat layers: along the channel dimension only."""

from ..errors import require


def read(tree, rec, path, cin):
    require(rec.state.get("d", 1) == 1, f"{path}: Concat on dim {rec.state.get('d')} is not supported")
    return dict(type="Concat", dim=1), sum(cin)
