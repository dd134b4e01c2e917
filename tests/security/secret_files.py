"""Files that hold credentials, with fake values in the real formats (made here, never committed):
what a user's folder or a cloned repository may hold. Each secret value is returned so a test can
check it is never searchable."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path


def _fake(alphabet: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
B64 = ALNUM + "+/"


def pem_block(kind: str = "RSA PRIVATE KEY", seed: int = 1) -> tuple[str, str]:
    body = _fake(B64, 64 * 12, seed)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----\n", lines[3]


def write_all(folder: Path) -> dict[str, str]:
    """Every credential-bearing file, by file name: the secret text a search must never find."""
    folder.mkdir(parents=True, exist_ok=True)
    secrets: dict[str, str] = {}

    pem, marker = pem_block("OPENSSH PRIVATE KEY", 1)
    (folder / "deploy_key.txt").write_text(pem)
    secrets["deploy_key.txt"] = marker

    pem, marker = pem_block("PRIVATE KEY", 2)
    cert = "-----BEGIN CERTIFICATE-----\n" + _fake(B64, 64, 3) + "\n-----END CERTIFICATE-----\n"
    (folder / "tls.crt").write_text(cert + pem)
    secrets["tls.crt"] = marker

    pem, marker = pem_block("PRIVATE KEY", 4)
    account = {
        "type": "service_account",
        "project_id": "demo-project",
        "private_key_id": _fake("0123456789abcdef", 40, 5),
        "private_key": pem,
        "client_email": "robot@demo-project.iam.gserviceaccount.com",
    }
    (folder / "gcp-project.json").write_text(json.dumps(account, indent=2))
    secrets["gcp-project.json"] = marker.replace("/", "\\/") if False else marker

    aws_secret = _fake(B64, 40, 6)
    (folder / "aws_credentials").write_text(
        f"[default]\naws_access_key_id = AKIA{_fake(ALNUM.upper()[:36], 16, 7)}\n"
        f"aws_secret_access_key = {aws_secret}\n"
    )
    secrets["aws_credentials"] = aws_secret

    npm = "npm_" + _fake(ALNUM, 36, 8)
    (folder / "npmrc").write_text(f"//registry.npmjs.org/:_authToken={npm}\n")
    secrets["npmrc"] = npm

    password = _fake(ALNUM, 24, 9)
    (folder / "netrc").write_text(f"machine api.example.com\n  login deploy\n  password {password}\n")
    secrets["netrc"] = password

    key_data = base64.b64encode(pem_block("RSA PRIVATE KEY", 10)[0].encode()).decode()
    (folder / "kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n"
        f"    client-certificate-data: {_fake(B64, 80, 11)}\n    client-key-data: {key_data}\n"
    )
    secrets["kubeconfig"] = key_data[40:80]

    db_password = _fake(ALNUM, 20, 12)
    (folder / "terraform.tfstate").write_text(
        json.dumps({"version": 4, "resources": [{"instances": [{"attributes": {"password": db_password}}]}]})
    )
    secrets["terraform.tfstate"] = db_password

    token = "ghp_" + _fake(ALNUM, 36, 13)
    (folder / "config.yml").write_text(
        f"# deploy settings\nregion: eu-west-1\nreplicas: 3\ngithub_token: {token}\nnotes: rotate monthly\n"
    )
    secrets["config.yml"] = token
    return secrets
