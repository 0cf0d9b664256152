def train(config):  # no seed, device, reporter, data keywords
    return {"acc": 1.0}
