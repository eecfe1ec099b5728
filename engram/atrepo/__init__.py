"""Space-repo primitives shared by the syncer (engram/sync) and the space host: LtHash set hashes, record
blocks and CIDs, signed commits, repo ops and ``getRepo`` CAR exports. No I/O and no store access here.

    lthash.LtHash            add/remove elements, .state (2048 bytes), .digest() (sha256 of the state)
    lthash.record_element    "{collection}/{rkey}/{cid}"
    blocks                   encode_block/decode_block (DAG-CBOR), cid_of_block/cid_of_value, from_json/to_json
    commit.SignedCommit      to_cbor/from_cbor, to_json/from_json ({"$bytes"} fields)
    commit.sign_commit       (set hash, CommitContext, PrivateKey) -> SignedCommit
    commit.verify_commit     rev, mac, signature (strict low-S) and optionally the recomputed set hash
    ops.RepoOp, ops.apply_op listRepoOps entries folded into an LtHash
    car.write_repo_car       CARv1 [commit, index] + record blocks in canonical path order
    car.verify_repo_car      the reverse, fully checked -> VerifiedRepo(commit, index, records)
"""
