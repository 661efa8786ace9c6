"""Reading the files a case saved (JSON the API server gave, text an agent wrote), as UTF-8."""
import json


def read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def read_text(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()
