"""Decision benchmarks: ``janus bench world`` (a memory world with known ground truth, where every policy's true
accuracy is measured) and ``janus replay`` (the recorded Dynamic Cheatsheet trajectories replayed through the
controller's triggers).

Owns the world, the policies it compares, the replay of recorded trajectories and their plots. May import the
controller, encoders, errors, the store's reader (to replay a run folder) and the report's PNG writer; never run/ or cli/.
"""
