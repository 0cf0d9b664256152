def scaled(x):
    return 0.5 * x
