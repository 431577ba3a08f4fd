#!/usr/bin/python3
"""Turns one version of a CustomResourceDefinition into a JSON Schema file.

    extract-crd-schema.py CRD.yaml VERSION SOURCE > OUT.json

The CRD's openAPIV3Schema is kept as it is, less its `description` texts
(they make up most of the size and validate nothing); apiVersion and kind are
pinned to the CRD's group/version/kind. SOURCE (repository, commit, path) is
recorded in `$comment` so a reader can check the file against its origin.
Run with Debian's python3 (python3-yaml).
"""
import json
import sys

import yaml


def strip_descriptions(node):
    if isinstance(node, dict):
        return {k: strip_descriptions(v) for k, v in node.items()
                if not (k == "description" and isinstance(v, str))}
    if isinstance(node, list):
        return [strip_descriptions(v) for v in node]
    return node


def main():
    crd_path, version, source = sys.argv[1:4]
    with open(crd_path, encoding="utf-8") as f:
        crd = next(d for d in yaml.safe_load_all(f) if d)
    spec = crd["spec"]
    ver = next(v for v in spec["versions"] if v["name"] == version)
    schema = strip_descriptions(ver["schema"]["openAPIV3Schema"])
    props = schema.setdefault("properties", {})
    props["apiVersion"] = {"const": f"{spec['group']}/{version}"}
    props["kind"] = {"const": spec["names"]["kind"]}
    schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind"})
    out = {"$comment": f"openAPIV3Schema of {crd['metadata']['name']} {version}, "
                       f"from {source}; descriptions removed",
           **schema}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
