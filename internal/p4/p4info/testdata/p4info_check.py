# Checks edgenf's P4Info protobuf forms against the p4runtime PyPI package
# (p4lang's generated p4info_pb2). Reads JSON on stdin:
#   {"schema": HEX,                      edgenf's FileDescriptorProto
#    "programs": [{"name", "text", "bin": HEX}]}
# and prints a JSON list of problems (empty: all good):
#   - every field of edgenf's schema exists in p4lang's with the same
#     number, type, label and type name;
#   - each program's text parses with protobuf's own text_format parser
#     into p4.config.v1.P4Info, its binary parses too, both give the same
#     message, and re-encoding it gives edgenf's bytes exactly.
import json, sys
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory, text_format
from p4.config.v1 import p4info_pb2, p4types_pb2

# The package's generated modules predate protobuf 4: with today's
# runtime their map fields do not work. Their descriptors are p4lang's
# schema all the same: load them into a pool and let protobuf make the
# message classes.
pool = descriptor_pool.DescriptorPool()
for mod in (any_pb2, p4types_pb2, p4info_pb2):
    fdp = descriptor_pb2.FileDescriptorProto()
    mod.DESCRIPTOR.CopyToProto(fdp)
    pool.Add(fdp)
P4Info = message_factory.GetMessageClass(pool.FindMessageTypeByName("p4.config.v1.P4Info"))

req = json.load(sys.stdin)
problems = []

theirs = {}
for mod in (p4info_pb2, p4types_pb2):
    fd = descriptor_pb2.FileDescriptorProto()
    mod.DESCRIPTOR.CopyToProto(fd)
    def index(msgs, prefix):
        for m in msgs:
            theirs[prefix + m.name] = m
            index(m.nested_type, prefix + m.name + ".")
    index(fd.message_type, "")

ours = descriptor_pb2.FileDescriptorProto.FromString(bytes.fromhex(req["schema"]))
def compare(msgs, prefix):
    for m in msgs:
        name = prefix + m.name
        t = theirs.get(name)
        if t is None:
            problems.append("message %s: not in p4runtime" % name)
            continue
        tf = {f.name: f for f in t.field}
        for f in m.field:
            g = tf.get(f.name)
            if g is None:
                problems.append("%s.%s: not in p4runtime" % (name, f.name))
                continue
            for attr in ("number", "type", "label", "type_name"):
                if getattr(f, attr) != getattr(g, attr):
                    problems.append("%s.%s: %s %r, p4runtime has %r" % (name, f.name, attr, getattr(f, attr), getattr(g, attr)))
        te = {e.name: {v.name: v.number for v in e.value} for e in t.enum_type}
        for e in m.enum_type:
            vals = {v.name: v.number for v in e.value}
            if te.get(e.name) != vals:
                problems.append("enum %s.%s: %r, p4runtime has %r" % (name, e.name, vals, te.get(e.name)))
        compare(m.nested_type, name + ".")
compare(ours.message_type, "")

for p in req["programs"]:
    try:
        from_text = text_format.Parse(p["text"], P4Info())
    except text_format.ParseError as e:
        problems.append("%s: text format: %s" % (p["name"], e))
        continue
    want = bytes.fromhex(p["bin"])
    from_bin = P4Info.FromString(want)
    if from_text != from_bin:
        problems.append("%s: the text and the binary differ" % p["name"])
    got = from_text.SerializeToString(deterministic=True)
    if got != want:
        problems.append("%s: p4runtime encodes the text as %d bytes, edgenf's binary has %d" % (p["name"], len(got), len(want)))
    if not from_text.tables and not from_text.actions:
        problems.append("%s: no tables and no actions" % p["name"])

json.dump(problems, sys.stdout)
