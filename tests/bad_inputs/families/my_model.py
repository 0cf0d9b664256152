"""A working family for the bad-input cases beside it: they misname it."""

import my_model_helpers


def train(config, *, seed, device, reporter, data):
    return {"acc": my_model_helpers.scaled(config["x"])}
