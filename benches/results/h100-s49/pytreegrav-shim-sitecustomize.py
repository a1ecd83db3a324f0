# Device-side compatibility for numba-cuda 0.30.4 under the device's numpy, which no
# longer has np.row_stack (an alias of np.vstack, deprecated in numpy 2.0): restored so
# numba-cuda imports. Only pytreegrav's run uses this folder.
import numpy as np

if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
