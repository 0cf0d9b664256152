from showwork.cli import run

run()
