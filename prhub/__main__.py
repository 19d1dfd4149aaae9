from prhub.cli import app

app(prog_name="prhub")
