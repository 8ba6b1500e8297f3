"""Signing a decision gives the bytes and HMAC stepwise's Go code verifies
(topics.SigningBytes), on a decision whose payload has what JSON encoders
disagree on: key order, non-ASCII keys, escapes, U+2028, HTML characters,
big integers and exponents."""

from stepwise_client.signature import sign, signing_bytes

DECISION = {
    "v": 1, "decision_id": "d-1", "run_id": "r-1", "call_id": "c-1", "action": "resume",
    "payload": {"note": "<ok> & \u2028 é\n\b\f\x01 \"q\" \\", "b": 2, "a": 1.5,
                "z": [True, None, {"y": 1e-07, "x": 12345678901234567890}], "é": "last", "Z": 0},
    "decided_by": "alice",
}

# What topics.SigningBytes returns for DECISION signed as erp, and the
# HMAC-SHA256 of it with the key "secret-1" (openssl dgst -sha256 -hmac).
GO_SIGNING_BYTES = (
    '{"action":"resume","call_id":"c-1","decided_by":"alice","decision_id":"d-1",'
    '"payload":{"Z":0,"a":1.5,"b":2,"note":"<ok> & \\u2028 é\\n\\b\\f\\u0001 \\"q\\" \\\\",'
    '"z":[true,null,{"x":12345678901234567890,"y":1e-07}],"é":"last"},"producer":"erp","run_id":"r-1"}'
).encode()
GO_SIGNATURE = "c5001e48788395e051801468c3023cbfa950e537cd322627c66ecdb02076fd94"


def test_the_signing_bytes_are_those_stepwise_computes():
    assert signing_bytes({**DECISION, "producer": "erp", "signature": "ignored"}) == GO_SIGNING_BYTES


def test_a_decision_signed_in_python_carries_stepwises_signature_and_keeps_its_fields():
    signed = sign({**DECISION, "signature": "stale"}, "erp", "secret-1")

    assert signed == {**DECISION, "producer": "erp", "signature": GO_SIGNATURE}
