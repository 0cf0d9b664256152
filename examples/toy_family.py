"""A toy trainable for the examples: a noisy bowl in (log10 lr, dropout), no data to load, no sleep.

Any function with this signature is a family (``family: toy_family.py:train`` in the YAML); see
docs/how-to/trainable.md, "The trainable contract".
"""

import math
import random


def train(config, *, seed, device, reporter, data):
    rng = random.Random(seed)  # the trial's training seed: the same seed gives the same scores
    distance = (math.log10(config["lr"]) + 2.5) ** 2 + 4 * (config["dropout"] - 0.2) ** 2
    accuracy = 0.0
    for epoch in range(config["epochs"]):
        accuracy = min(1.0, max(0.0, 0.95 - 0.1 * distance - 0.05 / (epoch + 1) + rng.gauss(0.0, 0.01)))
        reporter(epoch=epoch, val_accuracy=accuracy)
    test = min(1.0, max(0.0, accuracy - 0.01 + rng.gauss(0.0, 0.01)))
    return {"val_accuracy": accuracy, "test_accuracy": test}
