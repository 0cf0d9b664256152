import no_such_helper_module  # noqa: F401


def train(config, *, seed, device, reporter, data):
    return {"acc": 1.0}
