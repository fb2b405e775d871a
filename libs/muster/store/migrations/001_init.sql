-- The log, append-only: one row per event, addressed by (stream sequence, index in its envelope).
CREATE TABLE events (
    stream_seq  bigint      NOT NULL,
    idx         integer     NOT NULL,
    subject     text        NOT NULL,
    type        text        NOT NULL,
    payload     jsonb       NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream_seq, idx)
);
CREATE INDEX events_type ON events (type);

-- How far each projector has applied the stream; written in the same transaction as its rows.
CREATE TABLE checkpoints (
    consumer   text   PRIMARY KEY,
    stream_seq bigint NOT NULL
);

CREATE TABLE workloads (
    uid          text PRIMARY KEY,
    kinds        text[] NOT NULL DEFAULT '{}',
    status       text NOT NULL,
    error        text,
    field        text,
    submitted_at double precision,
    updated_seq  bigint NOT NULL
);

CREATE TABLE queues (
    name        text PRIMARY KEY,
    parent      text,
    priority    integer NOT NULL,
    spec        jsonb   NOT NULL,
    status      text    NOT NULL,   -- active | deleted | rejected
    error       text,
    fair_share  jsonb   NOT NULL DEFAULT '{}',
    allocated   jsonb   NOT NULL DEFAULT '{}',
    requested   jsonb   NOT NULL DEFAULT '{}',
    updated_seq bigint  NOT NULL
);

CREATE TABLE nodes (
    name        text PRIMARY KEY,
    pool        text    NOT NULL,
    spec        jsonb   NOT NULL,
    gpus        integer NOT NULL,
    cpu         bigint  NOT NULL,
    memory      bigint  NOT NULL,
    removed     boolean NOT NULL DEFAULT false,
    updated_seq bigint  NOT NULL
);

CREATE TABLE jobs (
    name          text PRIMARY KEY,
    queue         text    NOT NULL,
    kind          text    NOT NULL,
    pool          text    NOT NULL,
    priority      integer NOT NULL,
    preemptible   boolean NOT NULL,
    min_available integer NOT NULL,
    pods_total    integer NOT NULL,
    spec          jsonb   NOT NULL,
    status        text    NOT NULL,   -- pending | running | preempted | completed | deleted
    ever_ran      boolean NOT NULL DEFAULT false,
    reason        text,
    submitted_at  double precision NOT NULL,
    created_seq   bigint  NOT NULL,
    updated_seq   bigint  NOT NULL
);
CREATE INDEX jobs_queue ON jobs (queue);

CREATE TABLE pods (
    job         text    NOT NULL,
    idx         integer NOT NULL,
    status      text    NOT NULL,   -- pending | binding | bound | releasing | completed
    node        text,
    gpus        integer[] NOT NULL DEFAULT '{}',
    gpu_share   double precision NOT NULL DEFAULT 0,
    gpu         double precision NOT NULL,
    cpu         bigint  NOT NULL,
    memory      bigint  NOT NULL,
    updated_seq bigint  NOT NULL,
    PRIMARY KEY (job, idx)
);
CREATE INDEX pods_node ON pods (node) WHERE node IS NOT NULL;

-- Every allocator decision, in order, with why.
CREATE TABLE decisions (
    stream_seq bigint  NOT NULL,
    idx        integer NOT NULL,
    pool       text    NOT NULL,
    cycle      integer NOT NULL,
    epoch      integer NOT NULL,
    kind       text    NOT NULL,    -- bind | evict
    job        text    NOT NULL,
    pod        integer NOT NULL,
    node       text    NOT NULL,
    gpus       integer[] NOT NULL DEFAULT '{}',
    action     text,
    for_job    text,
    reason     text,
    PRIMARY KEY (stream_seq, idx)
);
CREATE INDEX decisions_job ON decisions (job);

CREATE TABLE cycles (
    stream_seq    bigint  NOT NULL,
    idx           integer NOT NULL,
    pool          text    NOT NULL,
    cycle         integer NOT NULL,
    epoch         integer NOT NULL,
    watermark     bigint  NOT NULL,
    clock         double precision NOT NULL,
    binds         integer NOT NULL,
    evictions     integer NOT NULL,
    config_digest text    NOT NULL,
    PRIMARY KEY (stream_seq, idx)
);

CREATE TABLE dead_letters (
    stream_seq   bigint  NOT NULL,
    idx          integer NOT NULL,
    service      text    NOT NULL,
    subject      text    NOT NULL,
    original_seq bigint  NOT NULL,
    error        text    NOT NULL,
    data         bytea   NOT NULL,
    PRIMARY KEY (stream_seq, idx)
);
