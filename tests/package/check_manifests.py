"""Checks packaging/kubernetes/ without a cluster, and writes each shard's
configuration with the Secret's values beside it for `wsrelay check`.

    check_manifests.py KUBERNETES_DIR OUT_DIR

Every *.yaml must be well-formed; each Kubernetes object has apiVersion,
kind and a name but no namespace; the StatefulSet's replicas equal the
ConfigMap's shard-N.yaml files (N = 0..replicas-1), no login ID is in two
shards, every ${VARIABLE} a shard names is in the Secret. OUT_DIR receives
shard-N.yaml and env (NAME=VALUE lines of the Secret's stringData).
Exits 1 with one line per problem."""
import glob
import os
import re
import sys

import yaml


def main():
    kdir, out = sys.argv[1], sys.argv[2]
    problems = []
    objects = {}
    for path in sorted(glob.glob(os.path.join(kdir, "*.yaml"))):
        try:
            with open(path, encoding="utf-8") as f:
                docs = [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            problems.append(f"{path}: not YAML: {e}")
            continue
        for d in docs:
            if not isinstance(d, dict) or "kind" not in d or "apiVersion" not in d:
                problems.append(f"{path}: a document without apiVersion and kind")
                continue
            if d["kind"] == "Kustomization":
                continue
            meta = d.get("metadata") or {}
            if not meta.get("name"):
                problems.append(f"{path}: {d['kind']} without metadata.name")
            if "namespace" in meta:
                problems.append(f"{path}: {d['kind']} sets a namespace")
            objects[(d["kind"], meta.get("name"))] = d

    cm = objects.get(("ConfigMap", "wsrelay-config"))
    secret = objects.get(("Secret", "wsrelay-secrets"))
    sts = objects.get(("StatefulSet", "wsrelay"))
    if not (cm and secret and sts):
        problems.append("missing the ConfigMap wsrelay-config, the Secret wsrelay-secrets "
                        "or the StatefulSet wsrelay")
        return report(problems)

    shards = sorted(k for k in cm["data"] if re.fullmatch(r"shard-[0-9]+\.yaml", k))
    replicas = sts["spec"]["replicas"]
    if shards != [f"shard-{i}.yaml" for i in range(replicas)]:
        problems.append(f"replicas {replicas} but the ConfigMap has {shards}")
    values = secret.get("stringData") or {}
    pod = sts["spec"]["template"]["spec"]
    refs = [e["secretRef"]["name"] for c in pod["containers"]
            for e in c.get("envFrom", []) if "secretRef" in e]
    if refs != ["wsrelay-secrets"]:
        problems.append(f"the container takes its environment from {refs}")
    mounts = {m["name"]: m["mountPath"] for c in pod["containers"] for m in c["volumeMounts"]}
    if mounts.get("config") != "/etc/wsrelay" or mounts.get("state") != "/var/lib/wsrelay":
        problems.append(f"config or state mounted elsewhere: {mounts}")
    claims = [t["metadata"]["name"] for t in sts["spec"].get("volumeClaimTemplates", [])]
    if claims != ["state"]:
        problems.append(f"volumeClaimTemplates {claims}, not one claim 'state' per shard")

    owner = {}
    os.makedirs(out, exist_ok=True)
    for name in shards:
        text = cm["data"][name]
        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError as e:
            problems.append(f"{name}: not YAML: {e}")
            continue
        for account in config.get("accounts", []):
            login = account.get("login_id")
            if login in owner:
                problems.append(f"login ID {login} is in {owner[login]} and {name}")
            owner[login] = name
        if config.get("state_file") != "/var/lib/wsrelay/state.json":
            problems.append(f"{name}: state_file is not on the shard's volume")
        for var in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", text):
            if var not in values:
                problems.append(f"{name}: ${{{var}}} is not in the Secret")
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(text)
    fd = os.open(os.path.join(out, "env"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        for k, v in values.items():
            f.write(f"{k}={v}\n")
    return report(problems)


def report(problems):
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
