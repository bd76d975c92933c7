"""Checks packaging/kubernetes/ without a cluster, and writes each pod's
configuration with the Secret's example values beside it for `wsrelay check`.

    check_manifests.py KUBERNETES_DIR OUT_DIR

Every *.yaml must be well-formed; each Kubernetes object has apiVersion,
kind and a name but no namespace; the kustomization applies no Secret (a
placeholder would overwrite the real one) and sets the image; the
StatefulSet's replicas equal the ConfigMap's wsrelay-N.yaml files (N =
0..replicas-1), each pod reads its own through $WSRELAY_CONFIG (so that
`kubectl exec wsrelay-N -- wsrelay status` reads it too), the image names a
registry, the container has a readiness and a liveness probe; no login ID
is in two shards, every ${VARIABLE} a shard names is in secrets.env.example.
OUT_DIR receives wsrelay-N.yaml and env (NAME=VALUE lines of the example).
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
    sts = objects.get(("StatefulSet", "wsrelay"))
    if not (cm and sts):
        problems.append("missing the ConfigMap wsrelay-config or the StatefulSet wsrelay")
        return report(problems)
    if any(kind == "Secret" for kind, _ in objects):
        problems.append("a Secret among the manifests: `kubectl apply -f DIR` would apply it")

    # What `kubectl apply -k` applies: no Secret, no secretGenerator (either
    # would replace the real Secret with placeholders).
    with open(os.path.join(kdir, "kustomization.yaml"), encoding="utf-8") as f:
        kust = yaml.safe_load(f)
    for res in kust.get("resources", []):
        with open(os.path.join(kdir, res), encoding="utf-8") as f:
            kinds = [d.get("kind") for d in yaml.safe_load_all(f) if d]
        if "Secret" in kinds:
            problems.append(f"kustomization.yaml applies the Secret of {res}")
    if kust.get("secretGenerator"):
        problems.append("kustomization.yaml generates a Secret")

    values = {}
    env_example = os.path.join(kdir, "secrets.env.example")
    if not os.path.exists(env_example):
        problems.append("no secrets.env.example: the Secret's keys are written nowhere")
    with open(env_example if os.path.exists(env_example) else os.devnull, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                k, _, v = line.partition("=")
                values[k] = v

    sts_name = sts["metadata"]["name"]
    shards = sorted(k for k in cm["data"] if re.fullmatch(re.escape(sts_name) + r"-[0-9]+\.yaml", k))
    replicas = sts["spec"]["replicas"]
    if shards != [f"{sts_name}-{i}.yaml" for i in range(replicas)]:
        problems.append(f"replicas {replicas} but the ConfigMap has {shards}")
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

    for c in pod["containers"]:
        # The pod's file by $WSRELAY_CONFIG, which kubectl exec inherits:
        # POD_NAME from the pod's name, and no -c on the command line.
        env = {e["name"]: e for e in c.get("env", [])}
        field = env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if field != "metadata.name":
            problems.append(f"container {c['name']}: POD_NAME is not the pod's name")
        if env.get("WSRELAY_CONFIG", {}).get("value") != "/etc/wsrelay/$(POD_NAME).yaml":
            problems.append(f"container {c['name']}: WSRELAY_CONFIG is not /etc/wsrelay/$(POD_NAME).yaml")
        line = c.get("command", []) + c.get("args", [])
        if "-c" in line or any("shard" in a or ".yaml" in a for a in line):
            problems.append(f"container {c['name']}: the command line names a file: {line}")
        if c.get("args") != ["run", "--loop"]:
            problems.append(f"container {c['name']}: args {c.get('args')}, not run --loop")
        # An image in a registry: HOST[:PORT]/PATH:TAG, the host with a dot.
        image = c.get("image", "")
        if not re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+(:[0-9]+)?/[a-z0-9./_-]+:[A-Za-z0-9._-]+", image):
            problems.append(f"container {c['name']}: image {image!r} names no registry")
        elif not any(i.get("name") == image.rsplit(":", 1)[0] for i in kust.get("images", [])):
            problems.append(f"kustomization.yaml's images: does not name {image}")
        for probe in ("readinessProbe", "livenessProbe"):
            command = (c.get(probe) or {}).get("exec", {}).get("command")
            if not command:
                problems.append(f"container {c['name']}: no {probe} (exec)")

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
                problems.append(f"{name}: ${{{var}}} is not in secrets.env.example")
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
