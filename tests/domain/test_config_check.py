"""Pure validators of `conveyor/config-check`: documents with lines, Kubernetes schemas,
kustomizations, Helm values, the summary, and the policy's `kubernetes_version`."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.configcheck import documents
from bot.configcheck.documents import MAX_DEPTH, parse_documents
from bot.configcheck.files import check_text, is_checked
from bot.configcheck.helm import (
    chart_directories,
    coalesce,
    is_values_file,
    load_schema,
    schema_findings,
)
from bot.configcheck.kubernetes import check_resource, is_kustomize, is_resource
from bot.configcheck.kustomize import image_findings, includes, is_kustomization, references
from bot.configcheck.messages import where
from bot.configcheck.report import Finding, Report, render
from bot.domain.policy import PolicyError, load_policy
from bot.domain.policy.kubernetes import latest_kubernetes_version, supported_kubernetes_versions
from bot.sandbox.demo import DEMO_POLICY

DIGEST = "sha256:" + "0" * 64


def one(text: str):  # type: ignore[no-untyped-def]
    parsed = parse_documents(text)
    assert parsed.ok, parsed.problems
    assert len(parsed.documents) == 1
    return parsed.documents[0]


# -- documents ------------------------------------------------------------------------------

def test_documents_remember_the_line_of_every_key_and_item() -> None:
    parsed = parse_documents("a: 1\nb:\n  - x\n  - when: 2024-01-01\n---\n---\nc: {d: yes}\n")
    first, second = parsed.documents  # the empty document in between holds nothing
    assert first.data == {"a": 1, "b": ["x", {"when": "2024-01-01"}]}  # a date stays text
    assert first.lines[("b", 1, "when")] == 4 and first.line_of(("b", 1, "nope")) == 4
    assert second.line == 7 and second.data == {"c": {"d": "yes"}}  # YAML 1.2: yes is text
    assert second.line_of(()) == 7


def test_duplicate_keys_merge_keys_and_syntax_errors() -> None:
    assert [(p.line, p.message) for p in parse_documents("a: 1\nb: 2\na: 3\n").problems] == [
        (3, "duplicate key 'a' (first defined at line 1)")]
    doc = one("base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n")
    assert doc.data["derived"] == {"x": 1, "y": 3}
    problem, = parse_documents("a: [1\n").problems
    assert problem.message.startswith("YAML does not parse") and problem.line == 2


def test_alias_bombs_and_deep_nesting_stop_with_a_problem(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(documents, "MAX_NODES", 5_000)  # the same stop, sooner
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(6))
    problem, = parse_documents(bomb).problems
    assert "expands to more than" in problem.message
    deep = "a: " + "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2) + "\n"
    problem, = parse_documents(deep).problems
    assert "nested deeper" in problem.message


# -- Kubernetes schemas ---------------------------------------------------------------------

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: ghcr.io/acme/web:1.0.0
          resources:
            limits: {cpu: 500m, memory: 1Gi}
          ports:
            - containerPort: 8080
"""


def test_a_valid_deployment_passes() -> None:
    outcome = check_resource(one(DEPLOYMENT), "1.31")
    assert outcome.findings == () and outcome.validated and outcome.note is None


@pytest.mark.parametrize(("edit", "line", "message"), [
    (("  selector:\n", "  replicas: three\n  selector:\n"), 6,
     "Deployment web: spec.replicas: expected integer, got string 'three' (Kubernetes 1.31)"),
    (("      labels: {app: web}\n", "      labels: {app: web}\n      lables: {}\n"), 11,
     "Deployment web: unknown field 'lables' in spec.template.metadata "
     "(did you mean 'labels'?) (Kubernetes 1.31)"),
    (("  selector:\n    matchLabels: {app: web}\n", ""), 5,
     "Deployment web: spec: missing required field 'selector' (Kubernetes 1.31)"),
    (("          resources:\n", "          env: {A: b}\n          resources:\n"), 15,
     "Deployment web: spec.template.spec.containers[0].env: expected array, got mapping "
     "(Kubernetes 1.31)"),
    (("kind: Deployment", "kind: Deployment\nkind2: x"), 3,
     "Deployment web: unknown field 'kind2' in the document (did you mean 'kind'?) "
     "(Kubernetes 1.31)"),
])
def test_deployment_errors_are_on_their_lines(edit: tuple[str, str], line: int,
                                              message: str) -> None:
    outcome = check_resource(one(DEPLOYMENT.replace(*edit)), "1.31")
    assert outcome.findings == ((line, message),)


@pytest.mark.parametrize(("value", "found"), [
    ("8080", ()), ("http", ()), ("null", ()),
    ("[80]", ((7, "Service web: spec.ports[0].targetPort: expected string or integer, got "
                  "list (Kubernetes 1.31)"),)),
])
def test_int_or_string_takes_either_and_null(value: str, found: tuple[object, ...]) -> None:
    service = one("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports:\n"
                  f"    - port: 80\n      targetPort: {value}\n")
    assert check_resource(service, "1.31").findings == found


def test_an_unknown_core_kind_is_an_error_with_a_suggestion() -> None:
    outcome = check_resource(one("apiVersion: apps/v1\nkind: Deploymnet\n"), "1.31")
    assert outcome.findings == ((2, "unknown kind 'Deploymnet' for apiVersion apps/v1 in "
                                    "Kubernetes 1.31 (did you mean 'Deployment'?)"),)
    outcome = check_resource(one("apiVersion: extensions/v1beta1\nkind: Deployment\n"), "1.31")
    assert outcome.findings == ((2, "Deployment is not served as extensions/v1beta1 in "
                                    "Kubernetes 1.31; use apiVersion apps/v1"),)


def test_the_kubernetes_version_decides_what_is_served() -> None:
    hpa = one("apiVersion: autoscaling/v2beta2\nkind: HorizontalPodAutoscaler\nmetadata:\n"
              "  name: web\nspec:\n  scaleTargetRef: {kind: Deployment, name: web}\n"
              "  maxReplicas: 3\n")
    assert check_resource(hpa, "1.25").findings == ()
    (line, message), = check_resource(hpa, "1.31").findings
    assert line == 2 and "not served as autoscaling/v2beta2 in Kubernetes 1.31" in message


def test_custom_resources_are_noted_not_failed() -> None:
    outcome = check_resource(one("apiVersion: cert-manager.io/v1\nkind: Certificate\n"
                                 "metadata: {name: tls}\nspec: {whatever: 1}\n"), "1.31")
    assert outcome.findings == () and not outcome.validated
    assert outcome.note == ("cert-manager.io/v1 Certificate tls: custom resource, schema not "
                            "known; not validated")


def test_a_list_validates_each_item() -> None:
    doc = one("apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: ConfigMap\n"
              "    metadata: {name: a}\n    data: [1]\n  - {kind: Secret}\n"
              "  - {apiVersion: example.com/v1, kind: Widget}\n")
    outcome = check_resource(doc, "1.31")
    assert [line for line, _ in outcome.findings] == [7, 8]
    assert "ConfigMap a: data: expected object" in outcome.findings[0][1]
    assert outcome.note is not None and "example.com/v1 Widget" in outcome.note


def test_what_counts_as_a_resource() -> None:
    assert is_resource({"apiVersion": "v1", "kind": "Service"})
    assert not is_resource({"replicaCount": 2, "kind": "x"})
    assert is_kustomize({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Component"})
    assert where(("spec", "containers", 0, "image")) == "spec.containers[0].image"


# -- kustomizations -------------------------------------------------------------------------

KUSTOMIZATION = """\
resources:
  - ../../base
  - ./extra.yaml
  - https://github.com/acme/shared//base?ref=v1
  - github.com/acme/other/base
  - ../../../../../etc
  - /abs.yaml
components: [../../components/probes]
patches:
  - path: patch.yaml
  - patch: |-
      - op: add
patchesStrategicMerge:
  - smp.yaml
configMapGenerator:
  - name: settings
    files: [app.properties, key=conf/other.txt]
    envs: [settings.env]
secretGenerator:
  - name: s
    env: secret.env
"""


def test_a_kustomization_lists_its_local_references_with_lines() -> None:
    refs, found = references(one(KUSTOMIZATION), "apps/web/overlays/prod")
    assert [(r.field, r.target, r.line, r.may_be_directory) for r in refs] == [
        ("resources", "apps/web/base", 2, True),
        ("resources", "apps/web/overlays/prod/extra.yaml", 3, True),
        ("components", "apps/web/components/probes", 8, True),
        ("patchesStrategicMerge", "apps/web/overlays/prod/smp.yaml", 14, False),
        ("patches", "apps/web/overlays/prod/patch.yaml", 10, False),
        ("configMapGenerator", "apps/web/overlays/prod/app.properties", 17, False),
        ("configMapGenerator", "apps/web/overlays/prod/conf/other.txt", 17, False),
        ("configMapGenerator", "apps/web/overlays/prod/settings.env", 18, False),
        ("secretGenerator", "apps/web/overlays/prod/secret.env", 21, False),
    ]
    assert found == [(6, "resources: '../../../../../etc' points outside the repository"),
                     (7, "resources: '/abs.yaml' is not a relative path")]
    assert includes(refs, "apps/web/base/deployment.yaml")
    assert not includes(refs, "apps/web/basement.yaml")
    assert references(one("resources: base\n"), "")[1] == [(1, "resources: expected a list")]


def test_kustomization_images() -> None:
    doc = one(f"""\
images:
  - name: ghcr.io/acme/web
    newTag: "1.0"
    digest: {DIGEST}
  - name: ghcr.io/acme/api
    newTag: {DIGEST}
  - name: GHCR.io/acme/WEB
    newtag: "2"
  - name: ghcr.io/acme/db
    digest: sha256:ABC
  - just-a-string
  - newName: nameless
""")
    assert image_findings(doc) == [
        (6, "images[1].newTag: holds a digest; a digest goes in digest: (newTag: is a tag "
            "such as 1.4.2)"),
        (8, "images[2]: unknown key 'newtag' (did you mean 'newTag'?)"),
        (7, "images: GHCR.io/acme/WEB is listed twice (first at line 2); kustomize would "
            "apply only one entry"),
        (10, "images[3].digest: must be sha256: followed by 64 lowercase hex characters, "
             "not 'sha256:ABC'"),
        (11, "images[4]: expected a mapping with name"),
        (12, "images[5]: needs a name"),
    ]
    assert image_findings(one("images: {}\n")) == [(1, "images: expected a list")]
    assert is_kustomization("a/Kustomization") and not is_kustomization("a/kustomize.yaml")


# -- Helm values ----------------------------------------------------------------------------

SCHEMA = {"type": "object", "required": ["image"],
          "properties": {"replicas": {"type": "integer"},
                         "image": {"type": "object", "required": ["tag"],
                                   "properties": {"tag": {"type": "string"}},
                                   "additionalProperties": False}}}


def test_values_are_validated_over_the_chart_defaults() -> None:
    values = one("replicas: 2\nimage:\n  tga: x\n")
    assert schema_findings(SCHEMA, "c/values.schema.json", values, {"image": {"tag": "1"}}) == [
        (3, "unknown field 'tga' in image (did you mean 'tag'?) (schema c/values.schema.json)")]
    assert schema_findings(SCHEMA, "s.json", one("replicas: x\n")) == [
        (1, "replicas: expected integer, got string 'x' (schema s.json)"),
        (1, "the document: missing required field 'image' (schema s.json)"),
    ]
    (line, message), = schema_findings({"type": 12}, "s.json", values)
    assert line == 1 and "s.json is not a valid JSON schema" in message


def test_helm_helpers() -> None:
    assert coalesce({"a": {"b": 1, "c": 2}, "d": 1}, {"a": {"c": 3}, "d": None}) == {
        "a": {"b": 1, "c": 3}}
    assert load_schema("[]") == (None, (1, "values.schema.json must hold a JSON object"))
    schema, problem = load_schema("{\n  oops\n}")
    assert schema is None and problem is not None and problem[0] == 2
    assert is_values_file("charts/api/values-prod.yaml") and not is_values_file("values.json")
    assert chart_directories("charts/api/env/values.yaml") == ["charts/api/env", "charts/api"]
    assert chart_directories("values.yaml") == [""]


# -- one file, the summary ------------------------------------------------------------------

def test_check_text_routes_each_kind_of_file() -> None:
    report = Report(kubernetes_version="1.31")
    check_text(report, None, "charts/api/values.yaml", "apiVersion: v1\nkind: Nope\n")
    check_text(report, None, "k/kustomization.yaml", "apiVersion: v1\nkind: Nope\n")
    check_text(report, None, "charts/api/templates/d.yaml", "x: {{ .Values.x }}\n")
    check_text(report, None, "apps/a.yaml", "apiVersion: v1\nkind: Nope\n")
    assert report.files == 4 and report.documents == 3
    assert [(f.path, f.line) for f in report.findings] == [("apps/a.yaml", 2)]
    assert [n.message for n in report.notes] == [
        "Helm template: checked once rendered, not here"]
    assert is_checked("a/Kustomization") and not is_checked("README.md")


def test_the_summary_groups_findings_by_file() -> None:
    report = Report(kubernetes_version="1.31", files=3, documents=5, resources=4)
    assert render(report) == (
        "success", "3 file(s), 5 document(s) checked, no problems",
        "Checked 3 file(s) and 5 YAML document(s): 4 Kubernetes resource(s) against "
        "Kubernetes 1.31, 0 kustomization(s), 0 Helm values file(s) against their chart's "
        "schema.")
    report.notes.append(Finding("c.yaml", 1, "x.io/v1 X: custom resource"))
    assert render(report)[1].endswith("; 1 not validated")
    report.findings += [Finding("a.yaml", 3, "one"), Finding("a.yaml", 9, "two"),
                        Finding("b.yaml", 1, "three")]
    conclusion, title, summary = render(report)
    assert (conclusion, title) == ("failure", "3 problem(s) in 2 file(s)")
    assert "### Problems\n\n**`a.yaml`** (2)\n- line 3: one\n- line 9: two\n\n**`b.yaml`** (1)" \
        in summary
    assert summary.endswith("### Not validated\n\n**`c.yaml`** (1)\n- line 1: x.io/v1 X: "
                            "custom resource")


# -- the policy's kubernetes_version --------------------------------------------------------

def test_kubernetes_version_defaults_to_the_newest_shipped() -> None:
    versions = supported_kubernetes_versions()
    assert "1.31" in versions and versions[-1] == latest_kubernetes_version()
    assert load_policy(DEMO_POLICY).kubernetes_version == latest_kubernetes_version()
    assert load_policy(DEMO_POLICY + 'kubernetes_version: "1.31"\n').kubernetes_version == "1.31"
    assert load_policy(DEMO_POLICY + 'kubernetes_version: "v1.30.2"\n').kubernetes_version \
        == "1.30"


@pytest.mark.parametrize(("value", "message"), [
    ('"1.19"', "kubernetes_version: unsupported Kubernetes version '1.19'; supported: 1.25 to"),
    ("1.31", 'kubernetes_version: write the version as a quoted string such as "1.31"'),
    ("[1]", 'kubernetes_version: expected a string such as "1.31", got list'),
    ('"latest"', "kubernetes_version: unsupported Kubernetes version 'latest'"),
])
def test_an_unsupported_kubernetes_version_is_an_error_on_its_line(value: str,
                                                                    message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(DEMO_POLICY + f"kubernetes_version: {value}\n")
    issue, = caught.value.issues
    assert issue.line == DEMO_POLICY.count("\n") + 1 and issue.column == 21
    assert issue.message.startswith(message), issue.message


# -- never a crash --------------------------------------------------------------------------

PIECES = [*"ab:-[]{}&*<!|>'\"#%@`,? \n\t01.~", "apiVersion: v1\n", "kind: Pod\n",
          "kind: List\n", "items:\n", "  - ", "spec:\n", "images:\n", "resources:\n", "---\n",
          "<<: *a\n", "&a ", "newTag: sha256:x\n"]
YAMLISH = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=YAMLISH)
def test_any_text_gives_findings_never_an_exception(text: str) -> None:
    report = Report(kubernetes_version="1.31")
    for path in ("apps/a.yaml", "k/kustomization.yaml", "charts/c/values.yaml"):
        for doc in check_text(report, None, path, text):
            if isinstance(doc.data, dict):
                references(doc, "k")
                image_findings(doc)
    assert all(f.line >= 1 for f in report.findings)


# -- image references in the environments' files ---------------------------------------------

ARGO_POLICY = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
  api:
    image: ghcr.io/acme/api
    source: acme/api
    tag_key: version
environments:
  - name: staging
    path: argocd/{service}-staging.yaml
  - name: production
    path: argocd/{service}-production.yaml
    after: staging
"""

APPLICATION = f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web-production
spec:
  sources:
    - repoURL: https://github.com/acme/deploy.git
      path: apps/web
      kustomize:
        images:
          - web=ghcr.io/acme/web:1.4.1
          - docker.io/library/nginx:1.25
    - chart: web
      repoURL: https://charts.example.com
      helm:
        parameters:
          - {{name: image.repository, value: ghcr.io/acme/web}}
          - {{name: image.tag, value: "1.4.1@{DIGEST}"}}
"""


def test_an_argocd_application_as_an_environment_file_has_its_images_checked() -> None:
    policy = load_policy(ARGO_POLICY)
    report = Report(kubernetes_version=latest_kubernetes_version())
    check_text(report, policy, "argocd/web-production.yaml", APPLICATION)
    assert [(f.line, f.message) for f in report.findings] == [
        (11, "web must be pinned by digest in production (gated by staging): use TAG@sha256:…"),
        (12, "docker.io/library/nginx is not under allowed_images (ghcr.io/acme/)"),
    ]
    assert [n.message for n in report.notes] == [
        "argoproj.io/v1alpha1 Application web-production: custom resource, schema not known; "
        "not validated"
    ]
    pinned = APPLICATION.replace("web:1.4.1\n", f"web:1.4.1@{DIGEST}\n").replace(
        "docker.io/library/nginx", "ghcr.io/acme/nginx")
    report = Report(kubernetes_version=latest_kubernetes_version())
    check_text(report, policy, "argocd/web-production.yaml", pinned)
    assert report.findings == []


def test_a_helm_block_whose_tag_key_is_not_named_is_reported() -> None:
    policy = load_policy(ARGO_POLICY.replace("    tag_key: version\n", ""))
    values = "image:\n  repository: ghcr.io/acme/api\n  version: 2.0.0\n"
    report = Report(kubernetes_version=latest_kubernetes_version())
    check_text(report, policy, "argocd/api-staging.yaml", values)
    assert [(f.line, f.message) for f in report.findings] == [
        (2, "a promotion of api would be refused: ghcr.io/acme/api has `version:` and no "
            "`tag:`; if the chart reads the tag from `version`, set `tag_key: version` on this "
            "service in .github/conveyor.yml"),
    ]
    report = Report(kubernetes_version=latest_kubernetes_version())
    check_text(report, load_policy(ARGO_POLICY), "argocd/api-staging.yaml", values)
    assert report.findings == []


def test_argocd_sources_with_malformed_image_pins_are_findings() -> None:
    text = (
        "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nspec:\n  template:\n"
        "    spec:\n      sources:\n        - kustomize:\n            images:\n"
        "              - ghcr.io/acme/web:1.4.1\n              - web=ghcr.io/acme/web:1.4.1@bad\n"
        "              - 3\n          helm:\n            parameters:\n              - value: x\n"
    )
    report = Report(kubernetes_version=latest_kubernetes_version())
    check_text(report, None, "argocd/web.yaml", text)
    assert [(f.line, f.message) for f in report.findings] == [
        (10, "spec.template.spec.sources[0].kustomize.images[1]: "
             "'web=ghcr.io/acme/web:1.4.1@bad' is not NAME:TAG, NAME@DIGEST or NAME=NEWNAME:TAG "
             "(invalid digest 'bad' (expected sha256:<64 hex>))"),
        (11, "spec.template.spec.sources[0].kustomize.images[2]: expected a string NAME:TAG, "
             "NAME@DIGEST or NAME=NEWNAME:TAG"),
        (14, "spec.template.spec.sources[0].helm.parameters[0]: expected a mapping with name "
             "and value"),
    ]
    write_back = "kustomize:\n  images:\n  - 'ghcr.io/acme/web:'\n"
    report = Report(kubernetes_version=latest_kubernetes_version())
    check_text(report, None, "apps/web/.argocd-source-web.yaml", write_back)
    assert [f.line for f in report.findings] == [3]
    report = Report(kubernetes_version=latest_kubernetes_version())
    check_text(report, None, "apps/web/kustomize-images.yaml", write_back)
    assert report.findings == []  # neither an Application nor a write-back file
