"""BatchNorm folding: conv(x, W) followed by BN(gamma, beta, mean, var, eps) becomes conv(x, W') + b'.

    s  = gamma / sqrt(var + eps)          per output channel
    W' = W * s                           (scales each output channel's filter)
    b' = beta + (b - mean) * s           (b = the conv's own bias, 0 if it has none)

Everything is computed in float64 from the checkpoint's stored values (fp16 or fp32); the writer
rounds once to the file's dtype.
"""

import numpy as np


def fold_bn(weight, conv_bias, bn_weight, bn_bias, running_mean, running_var, eps):
    """weight: (c2, c1/g, k, k); conv_bias: (c2,) or None; BN tensors: (c2,). Returns (W', b') float64."""
    w = np.asarray(weight, dtype=np.float64)
    c2 = w.shape[0]
    gamma = np.ones(c2) if bn_weight is None else np.asarray(bn_weight, dtype=np.float64)
    beta = np.zeros(c2) if bn_bias is None else np.asarray(bn_bias, dtype=np.float64)
    mean = np.asarray(running_mean, dtype=np.float64)
    var = np.asarray(running_var, dtype=np.float64)
    b = np.zeros(c2) if conv_bias is None else np.asarray(conv_bias, dtype=np.float64)
    scale = gamma / np.sqrt(var + float(eps))  # (c2,)
    return w * scale.reshape(-1, 1, 1, 1), beta + (b - mean) * scale
