"""ganstep inside other trainers: Lightning, Accelerate, and the resumable DataLoader they share.

Users import them by their public paths, ``ganstep.lightning`` and ``ganstep.accelerate``."""
