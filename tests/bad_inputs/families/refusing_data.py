def check_data(data):
    raise ValueError(f"data.corpus {data.get('corpus')!r} is not downloaded.")


def train(config, *, seed, device, reporter, data):
    return {"acc": 1.0}
