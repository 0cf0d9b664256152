"""Built-in model families, written on showwork's public trainable API (see showwork.trainable)."""
