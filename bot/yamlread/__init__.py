"""The one YAML reader: ruamel's parse events → positioned nodes (``nodes``), and those nodes →
plain data that remembers where everything is written (``data``).

Every reader of YAML in Conveyor goes through it: the manifest editor and the gate
(``bot.manifests``) work on the nodes, the policy loader and the config check on the data.
The rules are the same for all of them:

- **Parsing**: libyaml (the C parser of ``ruamel.yaml.clib``) when installed, ruamel's pure
  Python parser otherwise. libyaml implements YAML 1.1 and refuses a few YAML 1.2 constructs
  (a ``:`` inside a plain scalar of a flow collection, ``[a:b]``); such a text is parsed again
  by the pure parser, whose verdict stands, and libyaml's refusal is kept beside the result.
  The editor accepts such files (it quotes what it writes there); the policy loader and the
  config check refuse them, as YAML 1.1 parsers (libyaml, go-yaml v2) do.
- **Nesting**: at most ``MAX_DEPTH`` (64) collections deep; the policy, a small flat file,
  allows 32. The walker keeps its own stack, so deep input fails with a message, never with
  Python's recursion limit.
- **Aliases**: an alias stays its own node (the editor reports what inherits an anchored
  value); building data shares the anchored value instead of copying it, and a file whose
  aliases expand to more than ``MAX_NODES`` values is refused (a "billion laughs" file).
  Otherwise the work is linear in the text, whose size its reader bounds (the policy at
  256 KiB, repository files at the contents API's 1 MB).
- **Scalars**: YAML 1.2's core schema, as GitHub Actions reads workflows (``on:`` is a key)
  and go-yaml v3 (Kustomize's kyaml) reads values of no declared type: only ``true``/``false``
  are booleans (``yes``, ``on``, ``y`` are strings), only ``null``/``~``/empty are null;
  ``0755`` is octal as go-yaml still reads it; dates and other types beyond JSON's stay text,
  as they are once Kubernetes has turned the YAML into JSON. YAML 1.1 parsers (Helm's
  ``sigs.k8s.io/yaml``) read ``yes``/``on`` as booleans: the editor, which writes values those
  tools read, quotes any value either version would not read as a string
  (``bot.manifests.scalars``). See ``data.scalar_value``.
"""
