--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: trainledger_corpus; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA trainledger_corpus;


--
-- Name: stored_event_uuid; Type: TYPE; Schema: trainledger_corpus; Owner: -
--

CREATE TYPE trainledger_corpus.stored_event_uuid AS (
	originator_id uuid,
	originator_version bigint,
	topic text,
	state bytea
);


--
-- Name: es_insert_events_uuid(trainledger_corpus.stored_event_uuid[]); Type: FUNCTION; Schema: trainledger_corpus; Owner: -
--

CREATE FUNCTION trainledger_corpus.es_insert_events_uuid(events trainledger_corpus.stored_event_uuid[]) RETURNS SETOF bigint
    LANGUAGE plpgsql
    AS $$BEGIN    SET LOCAL lock_timeout = '0s';    NOTIFY "trainledger_events";    RETURN QUERY    INSERT INTO "trainledger_corpus"."trainledger_events" AS t (    originator_id, originator_version, topic, state)    SELECT originator_id, originator_version, topic, state    FROM unnest(events)    RETURNING notification_id;END;$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: ledger_schema; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.ledger_schema (
    name text NOT NULL,
    value text NOT NULL
);


--
-- Name: trainledger_events; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.trainledger_events (
    originator_id uuid NOT NULL,
    originator_version bigint NOT NULL,
    topic text,
    state bytea,
    notification_id bigint NOT NULL
)
WITH (autovacuum_enabled='true', autovacuum_vacuum_threshold='100000000', autovacuum_vacuum_scale_factor='0.5', autovacuum_analyze_threshold='1000', autovacuum_analyze_scale_factor='0.01');
ALTER TABLE ONLY trainledger_corpus.trainledger_events ALTER COLUMN state SET COMPRESSION lz4;


--
-- Name: trainledger_events_keys; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.trainledger_events_keys (
    originator_id uuid NOT NULL,
    key text NOT NULL,
    originator_version bigint NOT NULL
);


--
-- Name: trainledger_events_notification_id_seq; Type: SEQUENCE; Schema: trainledger_corpus; Owner: -
--

CREATE SEQUENCE trainledger_corpus.trainledger_events_notification_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: trainledger_events_notification_id_seq; Type: SEQUENCE OWNED BY; Schema: trainledger_corpus; Owner: -
--

ALTER SEQUENCE trainledger_corpus.trainledger_events_notification_id_seq OWNED BY trainledger_corpus.trainledger_events.notification_id;


--
-- Name: trainledger_events_seals; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.trainledger_events_seals (
    "position" bigint NOT NULL,
    digest bytea NOT NULL
);


--
-- Name: trainledger_snapshots; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.trainledger_snapshots (
    originator_id uuid NOT NULL,
    originator_version bigint NOT NULL,
    topic text,
    state bytea
)
WITH (autovacuum_enabled='true', autovacuum_vacuum_threshold='100000000', autovacuum_vacuum_scale_factor='0.5', autovacuum_analyze_threshold='1000', autovacuum_analyze_scale_factor='0.01');


--
-- Name: view_accounts; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_accounts (
    account text NOT NULL,
    parent text,
    cap bigint,
    committed bigint,
    pending bigint,
    overrun bigint,
    "position" bigint
);


--
-- Name: view_attempts; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_attempts (
    run_id text NOT NULL,
    number bigint NOT NULL,
    attempt_id text,
    label text,
    started_at double precision,
    resumed_from_step bigint,
    ended bigint
);


--
-- Name: view_bill_lines; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_bill_lines (
    provider text NOT NULL,
    line_id text NOT NULL,
    start double precision NOT NULL,
    end_at double precision NOT NULL,
    amount bigint,
    amount_text text,
    quantities text,
    run_id text,
    account text,
    session_id text,
    tags text,
    description text,
    restated bigint,
    "position" bigint
);


--
-- Name: view_bill_providers; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_bill_providers (
    provider text NOT NULL,
    lines bigint,
    restatements bigint,
    cost_data_through double precision,
    first_start double precision,
    last_end double precision,
    "position" bigint
);


--
-- Name: view_checkpoint_marks; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_checkpoint_marks (
    run_id text NOT NULL,
    attempt bigint NOT NULL,
    step bigint NOT NULL,
    scores text,
    deleted_at double precision,
    deleted_reason text
);


--
-- Name: view_checkpoints; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_checkpoints (
    run_id text NOT NULL,
    attempt bigint NOT NULL,
    step bigint NOT NULL,
    backend text,
    uri text,
    fidelity text,
    sampler_uri text,
    final bigint,
    saved_at double precision,
    expires_at double precision,
    digest text,
    superseded bigint
);


--
-- Name: view_datasets; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_datasets (
    run_id text NOT NULL,
    role text NOT NULL,
    digest text NOT NULL,
    format text,
    rows bigint,
    tokens bigint,
    source_uri text,
    report text,
    recorded_at double precision,
    "position" bigint
);


--
-- Name: view_families; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_families (
    family text NOT NULL,
    current bigint,
    "position" bigint
);


--
-- Name: view_names; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_names (
    id text NOT NULL,
    name text
);


--
-- Name: view_promotions; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_promotions (
    family text NOT NULL,
    "position" bigint NOT NULL,
    version bigint,
    previous bigint,
    kind text,
    verdict text,
    reason text,
    at double precision,
    principal text
);


--
-- Name: view_registered_points; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_registered_points (
    run_id text NOT NULL,
    family text NOT NULL,
    version bigint NOT NULL,
    attempt bigint,
    step bigint
);


--
-- Name: view_reservations; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_reservations (
    account text NOT NULL,
    reservation_id text NOT NULL,
    kind text,
    state text,
    amount bigint,
    actual bigint,
    overrun bigint,
    basis text,
    actual_basis text,
    reason text,
    attempt bigint,
    reserved_at double precision,
    settled_at double precision,
    expires_at double precision,
    "position" bigint
);


--
-- Name: view_run_plans; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_run_plans (
    run_id text NOT NULL,
    metric text,
    mode text,
    max_steps bigint,
    retraction_reason text,
    retraction_principal text,
    retracted_at double precision,
    anchor_time double precision,
    anchor_step bigint,
    recent_time double precision,
    recent_step bigint,
    last_time double precision,
    last_step bigint,
    "position" bigint
);


--
-- Name: view_run_sessions; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_run_sessions (
    provider text NOT NULL,
    session_id text NOT NULL,
    run_id text,
    attempt bigint,
    "position" bigint
);


--
-- Name: view_runs; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_runs (
    run_id text NOT NULL,
    run_key text,
    name text,
    status text,
    spec text,
    summary text,
    error text,
    opened_at double precision,
    finished_at double precision,
    current_attempt bigint,
    last_step bigint,
    "position" bigint
);


--
-- Name: view_series; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_series (
    run_id text NOT NULL,
    first_step bigint NOT NULL,
    attempt bigint NOT NULL,
    last_step bigint,
    superseded_above bigint,
    count bigint,
    "position" bigint
);


--
-- Name: view_series_rollup; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_series_rollup (
    run_id text NOT NULL,
    metric text NOT NULL,
    level bigint NOT NULL,
    bucket bigint NOT NULL,
    attempt bigint NOT NULL,
    count bigint,
    first_step bigint,
    first_value double precision,
    last_step bigint,
    last_value double precision,
    min_step bigint,
    min_value double precision,
    max_step bigint,
    max_value double precision,
    "position" bigint
);


--
-- Name: view_spend_hours; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_spend_hours (
    account text NOT NULL,
    hour bigint NOT NULL,
    committed bigint,
    adjusted bigint
);


--
-- Name: view_spend_tokens; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_spend_tokens (
    account text NOT NULL,
    hour bigint NOT NULL,
    token_class text NOT NULL,
    tokens bigint
);


--
-- Name: view_tracking; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_tracking (
    view text NOT NULL,
    "position" bigint NOT NULL
);


--
-- Name: view_version_sources; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_version_sources (
    family text NOT NULL,
    version bigint NOT NULL,
    run_id text,
    step bigint,
    attempt bigint,
    checkpoint_digest text
);


--
-- Name: view_versions; Type: TABLE; Schema: trainledger_corpus; Owner: -
--

CREATE TABLE trainledger_corpus.view_versions (
    family text NOT NULL,
    version bigint NOT NULL,
    artifact_uri text,
    digest text,
    source_run_id text,
    source_step bigint,
    metadata text,
    registered_at double precision,
    principal text
);


--
-- Name: trainledger_events notification_id; Type: DEFAULT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.trainledger_events ALTER COLUMN notification_id SET DEFAULT nextval('trainledger_corpus.trainledger_events_notification_id_seq'::regclass);


--
-- Data for Name: ledger_schema; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.ledger_schema VALUES ('version', '1');
INSERT INTO trainledger_corpus.ledger_schema VALUES ('written_by', '0.1.0');


--
-- Data for Name: trainledger_events; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.trainledger_events VALUES ('f90b77ed-8155-519c-b8e2-b04e67be7394', 1, 'ledger.domain.accounts:Account.Opened', '\x87a974696d657374616d70d7ffb0fe4d806b0fcafcb06f726967696e61746f725f746f706963be6c65646765722e646f6d61696e2e6163636f756e74733a4163636f756e74a97072696e636970616ca0aa726571756573745f6964a0a46e616d65d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a6706172656e74a0a3636170ce004c4b40', 1);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 1, 'ledger.domain.runs:Run.Opened', '\x89a974696d657374616d70d7ffb0fe4d806b0fcafcb06f726967696e61746f725f746f706963b66c65646765722e646f6d61696e2e72756e733a52756ea97072696e636970616ca0aa726571756573745f6964a0a772756e5f6b6579aa636f727075732d72756ea46e616d65a6636f72707573a47370656381a26c72cb3f1a36e2eb1c432da96d61785f7374657073c0a96f626a656374697665c0', 2);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 2, 'ledger.domain.runs:Run.PlanChanged', '\x84a974696d657374616d70d7ffb497fea06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a96d61785f7374657073cd0190', 3);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 3, 'ledger.domain.runs:Run.AttemptStarted', '\x88a974696d657374616d70d7ffb65658406b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401aa617474656d70745f6964a26131a56c6162656ca0b1726573756d65645f66726f6d5f73746570c0a96d61785f7374657073c0', 4);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 4, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffb9b92a806b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a00010203040506070809a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3ff0000000000000cb3fe0000000000000cb3fd5555555555555cb3fd0000000000000cb3fc999999999999acb3fc5555555555555cb3fc2492492492492cb3fc0000000000000cb3fbc71c71c71c71ccb3fb999999999999aa5696e646578c0a6646967657374d9203532303830303934356265303534346631313435346334656235343365303931', 5);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 5, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffbb46df006b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a0a0b0c0d0e0f10111213a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3fb745d1745d1746cb3fb5555555555555cb3fb3b13b13b13b14cb3fb2492492492492cb3fb1111111111111cb3fb0000000000000cb3fae1e1e1e1e1e1ecb3fac71c71c71c71ccb3faaf286bca1af28cb3fa999999999999aa5696e646578c0a6646967657374d9203564343335333962653164623732623533616136646530303466353965666461', 6);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 6, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffbd9e2ce06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a1415161718191a1b1c1da6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3fa8618618618618cb3fa745d1745d1746cb3fa642c8590b2164cb3fa5555555555555cb3fa47ae147ae147bcb3fa3b13b13b13b14cb3fa2f684bda12f68cb3fa2492492492492cb3fa1a7b9611a7b96cb3fa1111111111111a5696e646578c0a6646967657374d9203135643361333561616434323666633830353832313031636635323937366539', 7);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 7, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffc05696206b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a1e1f2021222324252627a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3fa0842108421084cb3fa0000000000000cb3f9f07c1f07c1f08cb3f9e1e1e1e1e1e1ecb3f9d41d41d41d41dcb3f9c71c71c71c71ccb3f9bacf914c1bad0cb3f9af286bca1af28cb3f9a41a41a41a41acb3f9999999999999aa5696e646578c0a6646967657374d9206265623339316134323665396538666130383731623763626462613065343937', 8);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 8, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffc13175606b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a28292a2b2c2d2e2f3031a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f98f9c18f9c18facb3f98618618618618cb3f97d05f417d05f4cb3f9745d1745d1746cb3f96c16c16c16c17cb3f9642c8590b2164cb3f95c9882b931057cb3f95555555555555cb3f94e5e0a72f0539cb3f947ae147ae147ba5696e646578c0a6646967657374d9203361376534333530346230363964393462373936393562646261646632333936', 9);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 9, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffc280d8c06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a32333435363738393a3ba6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f94141414141414cb3f93b13b13b13b14cb3f93521cfb2b78c1cb3f92f684bda12f68cb3f929e4129e4129ecb3f92492492492492cb3f91f7047dc11f70cb3f91a7b9611a7b96cb3f915b1e5f75270dcb3f91111111111111a5696e646578c0a6646967657374d9203739303661346564393335343433366531613434373963373132363535656330', 10);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 10, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffc3b0ec806b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a3c3d3e3f404142434445a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f90c9714fbcda3bcb3f90842108421084cb3f90410410410410cb3f90000000000000cb3f8f81f81f81f820cb3f8f07c1f07c1f08cb3f8e9131abf0b767cb3f8e1e1e1e1e1e1ecb3f8dae6076b981dbcb3f8d41d41d41d41da5696e646578c0a6646967657374d9203330336263396136623535373037396666366637313538353138353139653630', 11);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 11, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffc4d5d4e06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a464748494a4b4c4d4e4fa6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f8cd85689039b0bcb3f8c71c71c71c71ccb3f8c0e070381c0e0cb3f8bacf914c1bad0cb3f8b4e81b4e81b4fcb3f8af286bca1af28cb3f8a98ef606a63becb3f8a41a41a41a41acb3f89ec8e951033d9cb3f8999999999999aa5696e646578c0a6646967657374d9206361666136336231613866323734616133653965333466303738623835373032', 12);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 12, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffc60953a06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a50515253545556575859a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f8948b0fcd6e9e0cb3f88f9c18f9c18facb3f88acb90f6bf3aacb3f88618618618618cb3f88181818181818cb3f87d05f417d05f4cb3f878a4c8178a4c8cb3f8745d1745d1746cb3f8702e05c0b8170cb3f86c16c16c16c17a5696e646578c0a6646967657374d9203931316438333730313163636332396363626461306261346234303834306230', 13);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 13, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffc7096e206b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a5a5b5c5d5e5f60616263a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f86816816816817cb3f8642c8590b2164cb3f86058160581606cb3f85c9882b931057cb3f858ed2308158edcb3f85555555555555cb3f851d07eae2f815cb3f84e5e0a72f0539cb3f84afd6a052bf5bcb3f847ae147ae147ba5696e646578c0a6646967657374d9203635356336316233663332303937646434663639336633373562363961623662', 14);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 14, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffc7fb5fa06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a6465666768696a6b6c6da6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f8446f86562d9fbcb3f84141414141414cb3f83e22cbce4a902cb3f83b13b13b13b14cb3f83813813813814cb3f83521cfb2b78c1cb3f8323e34a2b10bfcb3f82f684bda12f68cb3f82c9fb4d812ca0cb3f829e4129e4129ea5696e646578c0a6646967657374d9206232366164633762666163613537373030616535613562626166643431306264', 15);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 15, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffc8f139206b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a6e6f7071727374757677a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f827350b8812735cb3f82492492492492cb3f821fb78121fb78cb3f81f7047dc11f70cb3f81cf06ada2811dcb3f81a7b9611a7b96cb3f81811811811812cb3f815b1e5f75270dcb3f8135c81135c811cb3f81111111111111a5696e646578c0a6646967657374d9203437373265386635336565303934636435356462353238663335323261363766', 16);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 16, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffc9c717206b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739a78797a7b7c7d7e7fcc80cc81a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f80ecf56be69c90cb3f80c9714fbcda3bcb3f80a6810a6810a7cb3f80842108421084cb3f80624dd2f1a9fccb3f80410410410410cb3f80204081020408cb3f80000000000000cb3f7fc07f01fc07f0cb3f7f81f81f81f820a5696e646578c0a6646967657374d9206332373934613236393935643461323265316565336361386330666161346436', 17);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 17, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffcb0ee9006b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739acc82cc83cc84cc85cc86cc87cc88cc89cc8acc8ba6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f7f44659e4a4271cb3f7f07c1f07c1f08cb3f7ecc07b301ecc0cb3f7e9131abf0b767cb3f7e573ac901e574cb3f7e1e1e1e1e1e1ecb3f7de5d6e3f8868acb3f7dae6076b981dbcb3f7d77b654b82c34cb3f7d41d41d41d41da5696e646578c0a6646967657374d9206132393639313732323436303230393833396237623834313239383735326330', 18);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 18, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffcc3940006b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739acc8ccc8dcc8ecc8fcc90cc91cc92cc93cc94cc95a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f7d0cb58f6ec074cb3f7cd85689039b0bcb3f7ca4b3055ee191cb3f7c71c71c71c71ccb3f7c3f8f01c3f8f0cb3f7c0e070381c0e0cb3f7bdd2b899406f7cb3f7bacf914c1bad0cb3f7b7d6c3dda338bcb3f7b4e81b4e81b4fa5696e646578c0a6646967657374d9206237373534393062393235633038386433623737326634626566393437336465', 19);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 19, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffcdc2dda06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739acc96cc97cc98cc99cc9acc9bcc9ccc9dcc9ecc9fa6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f7b2036406c80d9cb3f7af286bca1af28cb3f7ac5701ac5701bcb3f7a98ef606a63becb3f7a6d01a6d01a6dcb3f7a41a41a41a41acb3f7a16d3f97a4b02cb3f79ec8e951033d9cb3f79c2d14ee4a102cb3f7999999999999aa5696e646578c0a6646967657374d9206433383839303566663631363636313033653035326538316338326264393562', 20);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 20, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffcead6c806b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739acca0cca1cca2cca3cca4cca5cca6cca7cca8cca9a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f7970e4f80cb872cb3f7948b0fcd6e9e0cb3f7920fb49d0e229cb3f78f9c18f9c18facb3f78d3018d3018d3cb3f78acb90f6bf3aacb3f7886e5f0abb04acb3f78618618618618cb3f783c977ab2beddcb3f78181818181818a5696e646578c0a6646967657374d9203939343165666337623734633162623031363965326232636565363237623861', 21);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 21, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffd1388c006b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739accaaccabccacccadccaeccafccb0ccb1ccb2ccb3a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f77f405fd017f40cb3f77d05f417d05f4cb3f77ad2208e0ecc3cb3f778a4c8178a4c8cb3f7767dce434a9b1cb3f7745d1745d1746cb3f7724287f46debccb3f7702e05c0b8170cb3f76e1f76b4337c7cb3f76c16c16c16c17a5696e646578c0a6646967657374d9206234333236616665656465616565616338623462316661653030303732666431', 22);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 22, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffd3c88d806b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739accb4ccb5ccb6ccb7ccb8ccb9ccbaccbbccbcccbda6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f76a13cd1537290cb3f76816816816817cb3f7661ec6a5122f9cb3f7642c8590b2164cb3f7623fa77016240cb3f76058160581606cb3f75e75bb8d015e7cb3f75c9882b931057cb3f75ac056b015ac0cb3f758ed2308158eda5696e646578c0a6646967657374d9203061616163636637383035333436663833623064626161393035373336346165', 23);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 23, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffd58783606b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739accbeccbfccc0ccc1ccc2ccc3ccc4ccc5ccc6ccc7a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f7571ed3c506b3acb3f75555555555555cb3f75390948f40febcb3f751d07eae2f815cb3f75015015015015cb3f74e5e0a72f0539cb3f74cab88725af6ecb3f74afd6a052bf5bcb3f749539e3b2d067cb3f747ae147ae147ba5696e646578c0a6646967657374d9203566616430373563326431363532323435346264623364366630616363363934', 24);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 24, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffd702c9206b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739accc8ccc9cccacccbcccccccdcccecccfccd0ccd1a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f7460cbc7f5cf9acb3f7446f86562d9fbcb3f742d6625d51f87cb3f74141414141414cb3f73fb013fb013fbcb3f73e22cbce4a902cb3f73c995a47babe7cb3f73b13b13b13b14cb3f73991c2c187f63cb3f73813813813814a5696e646578c0a6646967657374d9206264316432663864356635353564326235663563356565373666356638346166', 25);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 30, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffe12709c06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739acd0104cd0105cd0106cd0107cd0108cd0109cd010acd010bcd010ccd010da6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f6f6310aca0dbb5cb3f6f44659e4a4271cb3f6f25f644230ab5cb3f6f07c1f07c1f08cb3f6ee9c7f8458e02cb3f6ecc07b301ecc0cb3f6eae807aba01ebcb3f6e9131abf0b767cb3f6e741aa59750e4cb3f6e573ac901e574a5696e646578c0a6646967657374d9203933623732313832396164613965343931396136333634346633353231643631', 31);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 36, 'ledger.domain.runs:Run.CheckpointDeleted', '\x86a974696d657374616d70d7ffe6ea9fc06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a47374657064a6726561736f6ea9726574656e74696f6e', 37);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ace54c45-9c66-5f38-8183-2cb2fad9317d', 2, 'ledger.domain.accounts:Account.SpendRolledUp', '\x89a974696d657374616d70d7ff0333e2a06b0fcafda97072696e636970616ca0aa726571756573745f6964a0a56368696c64aa636f727075732d6c6162a3726566a27231a46b696e64a772657365727665ad70656e64696e675f64656c7461ce000f4240af636f6d6d69747465645f64656c746100ad6f76657272756e5f64656c746100', 49);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 3, 'ledger.domain.accounts:Account.SpendReserved', '\x88a974696d657374616d70d7ff0333e2a06b0fcafda97072696e636970616ca0aa726571756573745f6964a0ae7265736572766174696f6e5f6964a27231a6616d6f756e74ce000f4240a5626173697380aa657870697265735f6174d7ff0333e2a06b0fce81a7617474656d707400', 50);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ace54c45-9c66-5f38-8183-2cb2fad9317d', 7, 'ledger.domain.accounts:Account.SpendRolledUp', '\x89a974696d657374616d70d7ff07f03a006b0fcafda97072696e636970616ca0aa726571756573745f6964a0a56368696c64aa636f727075732d6c6162a3726566a27235a46b696e64a772657365727665ad70656e64696e675f64656c7461cd4e20af636f6d6d69747465645f64656c746100ad6f76657272756e5f64656c746100', 60);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 9, 'ledger.domain.accounts:Account.SpendReserved', '\x88a974696d657374616d70d7ff07f03a006b0fcafda97072696e636970616ca0aa726571756573745f6964a0ae7265736572766174696f6e5f6964a27235a6616d6f756e74cd4e20a5626173697380aa657870697265735f6174d7ff07f03a006b0fce81a7617474656d707400', 61);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 6, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff51c3a4006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a66c696e652d34a57374617274d6ff6955f140a3656e64d6ff6955ff50a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206432313738666131323564343434633861616161323435336564323635613064b1636f73745f646174615f7468726f756768c0', 80);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 12, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff586c5a406b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3130a57374617274d6ff695645a0a3656e64d6ff695653b0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203865653537643261663764316239333663653732363137383032643038346334b1636f73745f646174615f7468726f756768c0', 86);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 18, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff79619bc06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3136a57374617274d6ff69569a00a3656e64d6ff6956a810a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203332636364633364383733353431666434666132663563636461646163643664b1636f73745f646174615f7468726f756768c0', 92);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 24, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff8e3c1c006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3232a57374617274d6ff6956ee60a3656e64d6ff6956fc70a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203966356164643334363836323963663537313132633638313061643961316361b1636f73745f646174615f7468726f756768c0', 98);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 30, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff9c52cc806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3238a57374617274d6ff695742c0a3656e64d6ff695750d0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203332363239363564666630363931626535633764646533396637656262323765b1636f73745f646174615f7468726f756768c0', 104);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 36, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffacbdcd406b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3334a57374617274d6ff69579720a3656e64d6ff6957a530a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203935373261376664363130656232626537393930656333653665646439623933b1636f73745f646174615f7468726f756768c0', 110);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 42, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffc35bc7a06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3430a57374617274d6ff6957eb80a3656e64d6ff6957f990a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203634303037633163646661653235653363643932636464393064346238346562b1636f73745f646174615f7468726f756768c0', 116);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 48, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffdab040c06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3436a57374617274d6ff69583fe0a3656e64d6ff69584df0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203235656361373131326431656261323966303934363562366565353232366437b1636f73745f646174615f7468726f756768c0', 122);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 53, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffec4faaa06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3531a57374617274d6ff69588630a3656e64d6ff69589440a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206333313563663437616338366435333730366534656639356365613734366333b1636f73745f646174615f7468726f756768c0', 127);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ae4c2486-c8c8-5f90-97d7-deb719c587b1', 3, 'ledger.domain.tokens:Tokens.TokenIssued', '\x89a974696d657374616d70d7ff37aeb3206b0fcaffa97072696e636970616ca0aa726571756573745f6964a0a8746f6b656e5f6964b8656461383038663933656634363530326130643131383562a6686f6c646572aa636f727075732d6f7073a4726f6c65a86f70657261746f72a76163636f756e74ab636f727075732d7465616daa657870697265735f6174c0ad7365637265745f736861323536d94032636130633231393361343734653761636366663161356662343363323432656538333138656436316233333738313536623535643666373865616164303161', 135);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 25, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffd8af9e606b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739accd2ccd3ccd4ccd5ccd6ccd7ccd8ccd9ccdaccdba6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f73698df3de0748cb3f73521cfb2b78c1cb3f733ae45b57bcb2cb3f7323e34a2b10bfcb3f730d190130d190cb3f72f684bda12f68cb3f72e025c04b8097cb3f72c9fb4d812ca0cb3f72b404ad012b40cb3f729e4129e4129ea5696e646578c0a6646967657374d9206265643137666631303239323639633662346430346433303839326466376137', 26);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 31, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffe1c06b606b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739acd010ecd010fcd0110cd0111cd0112cd0113cd0114cd0115cd0116cd0117a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f6e3a9179dc1a73cb3f6e1e1e1e1e1e1ecb3f6e01e01e01e01ecb3f6de5d6e3f8868acb3f6dca01dca01dcacb3f6dae6076b981dbcb3f6d92f2231e7f8acb3f6d77b654b82c34cb3f6d5cac807572b2cb3f6d41d41d41d41da5696e646578c0a6646967657374d9206631316233393234343234393864373839386263623534646566383134333763', 32);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 37, 'ledger.domain.runs:Run.DatasetRecorded', '\x8aa974696d657374616d70d7ffe786dfc06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a4726f6c65a5747261696ea6646967657374d9477368613235363a63636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363a6666f726d6174a56a736f6e6ca4726f7773cd03e8a6746f6b656e73cdc350aa736f757263655f757269a0a67265706f727480', 38);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ace54c45-9c66-5f38-8183-2cb2fad9317d', 1, 'ledger.domain.accounts:Account.Opened', '\x87a974696d657374616d70d7ffed2f6be06b0fcafcb06f726967696e61746f725f746f706963be6c65646765722e646f6d61696e2e6163636f756e74733a4163636f756e74a97072696e636970616ca0aa726571756573745f6964a0a46e616d65ab636f727075732d7465616da6706172656e74a0a3636170ce05f5e100', 46);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ace54c45-9c66-5f38-8183-2cb2fad9317d', 3, 'ledger.domain.accounts:Account.SpendRolledUp', '\x89a974696d657374616d70d7ff0419ce006b0fcafda97072696e636970616ca0aa726571756573745f6964a0a56368696c64aa636f727075732d6c6162a3726566a27231a46b696e64a6636f6d6d6974ad70656e64696e675f64656c7461d2fff0bdc0af636f6d6d69747465645f64656c7461ce000dbba0ad6f76657272756e5f64656c746100', 51);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 4, 'ledger.domain.accounts:Account.SpendCommitted', '\x89a974696d657374616d70d7ff0419ce006b0fcafda97072696e636970616ca0aa726571756573745f6964a0ae7265736572766174696f6e5f6964a27231a87265736572766564ce000f4240a661637475616cce000dbba0a5626173697380a76f76657272756e00a46c617465c2', 52);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ace54c45-9c66-5f38-8183-2cb2fad9317d', 8, 'ledger.domain.accounts:Account.SpendRolledUp', '\x89a974696d657374616d70d7ff08c973606b0fcafda97072696e636970616ca0aa726571756573745f6964a0a56368696c64aa636f727075732d6c6162a3726566a26331a46b696e64a6636861726765ad70656e64696e675f64656c746100af636f6d6d69747465645f64656c7461cd04d2ad6f76657272756e5f64656c746100', 62);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 10, 'ledger.domain.accounts:Account.SpendCharged', '\x88a974696d657374616d70d7ff08c973606b0fcafda97072696e636970616ca0aa726571756573745f6964a0a96368617267655f6964a26331a6616d6f756e74cd04d2a5626173697380a6726561736f6ea773746f72616765a76f76657272756e00', 63);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 41, 'ledger.domain.runs:Run.CheckpointRegistered', '\x87a974696d657374616d70d7ff3dc7ac806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a666616d696c79ac636f727075732d6d6f64656ca776657273696f6e01a7617474656d707401a473746570ccc8', 68);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('09d1bc64-93ca-5f8a-8cb4-bfafe621689a', 1, 'ledger.domain.registry:Family.Created', '\x85a974696d657374616d70d7ff3dc7ac806b0fcafeb06f726967696e61746f725f746f706963bd6c65646765722e646f6d61696e2e72656769737472793a46616d696c79a97072696e636970616ca0aa726571756573745f6964a0a46e616d65ac636f727075732d6d6f64656c', 69);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('09d1bc64-93ca-5f8a-8cb4-bfafe621689a', 2, 'ledger.domain.registry:Family.VersionRegistered', '\x8aa974696d657374616d70d7ff3dc7ac806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a776657273696f6e01ac61727469666163745f757269b066696c653a2f2f2f6d6f64656c732f31a6646967657374d9477368613235363a63636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363ad736f757263655f72756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831ab736f757263655f73746570ccc8a86d6574616461746180b1736f757263655f636865636b706f696e7484a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a473746570ccc8a7617474656d707401b1636865636b706f696e745f646967657374d9477368613235363a63636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363', 70);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 7, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff52d17a206b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a66c696e652d35a57374617274d6ff6955ff50a3656e64d6ff69560d60a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206465383133653039323063656432343361633865353433303133653563383835b1636f73745f646174615f7468726f756768c0', 81);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 13, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff5b12b2806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3131a57374617274d6ff695653b0a3656e64d6ff695661c0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203331313239303730613661393835306431333862313661643664336433666463b1636f73745f646174615f7468726f756768c0', 87);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 19, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff80c073006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3137a57374617274d6ff6956a810a3656e64d6ff6956b620a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203161656364326331633636613061333632363262626534333637313538323162b1636f73745f646174615f7468726f756768c0', 93);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 25, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff940fcf006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3233a57374617274d6ff6956fc70a3656e64d6ff69570a80a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203637363965623237336166303362643034343862666537623230643462366561b1636f73745f646174615f7468726f756768c0', 99);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 31, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff9ff017806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3239a57374617274d6ff695750d0a3656e64d6ff69575ee0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203332316337373831333137623661393266616664653938316232373038633937b1636f73745f646174615f7468726f756768c0', 105);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 37, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffb314e8e06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3335a57374617274d6ff6957a530a3656e64d6ff6957b340a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203732623130313832653133376361636334356633343435333162653737663734b1636f73745f646174615f7468726f756768c0', 111);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 43, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffc61087606b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3431a57374617274d6ff6957f990a3656e64d6ff695807a0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206536616131623730353634333139653661616363643563303661306532383064b1636f73745f646174615f7468726f756768c0', 117);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 49, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffddffb9e06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3437a57374617274d6ff69584df0a3656e64d6ff69585c00a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203164333165363034373561383731343034383835616133646339386466653561b1636f73745f646174615f7468726f756768c0', 123);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 54, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff039ec2006b0fcaffa97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3532a57374617274d6ff69589440a3656e64d6ff6958a250a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206562346234383032653338336437623261613530636561373361313232613138b1636f73745f646174615f7468726f756768c0', 128);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('f90b77ed-8155-519c-b8e2-b04e67be7394', 4, 'ledger.domain.accounts:Account.SpendAdjusted', '\x87a974696d657374616d70d7ff1d1a22606b0fcaffa97072696e636970616ca0aa726571756573745f6964a0ad61646a7573746d656e745f6964b562696c6c3a31326439376131333934316630666532a6616d6f756e74ce0001b198a462696c6c88b062696c6c65645f7573645f6d6963726fce0001b198b570726f766973696f6e616c5f7573645f6d6963726f00b3657374696d617465645f7573645f6d6963726fce000186a0ba636f76657265645f657374696d6174655f7573645f6d6963726f00a56c696e657337a970726f76696465727391a674696e6b6572af64726966745f7573645f6d6963726fce0001b198b961646a75737465645f6265666f72655f7573645f6d6963726f00a76f76657272756e00', 132);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 26, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffdb30cb006b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739accdcccddccdeccdfcce0cce1cce2cce3cce4cce5a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f7288b01288b013cb3f727350b8812735cb3f725e22708092f1cb3f72492492492492cb3f723456789abcdfcb3f721fb78121fb78cb3f720b470c67c0d9cb3f71f7047dc11f70cb3f71e2ef3b3fb874cb3f71cf06ada2811da5696e646578c0a6646967657374d9206534376132336530373262663866373835626239343933373632396661326261', 27);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 32, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffe2a50ea06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739acd0118cd0119cd011acd011bcd011ccd011dcd011ecd011fcd0120cd0121a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f6d272ca3fc5b1acb3f6d0cb58f6ec074cb3f6cf26e5c44bfc6cb3f6cd85689039b0bcb3f6cbe6d9601cbe7cb3f6ca4b3055ee191cb3f6c8b265afb8a42cb3f6c71c71c71c71ccb3f6c5894d10d4986cb3f6c3f8f01c3f8f0a5696e646578c0a6646967657374d9203638363939313736353536643332363339373261343262313833303861383131', 33);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 38, 'ledger.domain.runs:Run.SessionLinked', '\x86a974696d657374616d70d7ffe82c57206b0fcafca97072696e636970616ca0aa726571756573745f6964a0a870726f7669646572a674696e6b6572aa73657373696f6e5f6964a973657373696f6e2d31a7617474656d707401', 39);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ace54c45-9c66-5f38-8183-2cb2fad9317d', 4, 'ledger.domain.accounts:Account.SpendRolledUp', '\x89a974696d657374616d70d7ff05310a606b0fcafda97072696e636970616ca0aa726571756573745f6964a0a56368696c64aa636f727075732d6c6162a3726566a27232a46b696e64a772657365727665ad70656e64696e675f64656c7461ce0007a120af636f6d6d69747465645f64656c746100ad6f76657272756e5f64656c746100', 53);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 5, 'ledger.domain.accounts:Account.SpendReserved', '\x88a974696d657374616d70d7ff05310a606b0fcafda97072696e636970616ca0aa726571756573745f6964a0ae7265736572766174696f6e5f6964a27232a6616d6f756e74ce0007a120a5626173697380aa657870697265735f6174d7ff05310a606b0fce81a7617474656d707400', 54);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('f90b77ed-8155-519c-b8e2-b04e67be7394', 2, 'ledger.domain.accounts:Account.SpendReserved', '\x88a974696d657374616d70d7ff098ca4206b0fcafda97072696e636970616ca0aa726571756573745f6964a0ae7265736572766174696f6e5f6964a672756e2d7231a6616d6f756e74ce000186a0a5626173697380aa657870697265735f6174d7ff098ca4206b0fce81a7617474656d707400', 64);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('09d1bc64-93ca-5f8a-8cb4-bfafe621689a', 3, 'ledger.domain.registry:Family.VersionRegistered', '\x8aa974696d657374616d70d7ff41862b806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a776657273696f6e02ac61727469666163745f757269b066696c653a2f2f2f6d6f64656c732f32a6646967657374d9477368613235363a64646464646464646464646464646464646464646464646464646464646464646464646464646464646464646464646464646464646464646464646464646464ad736f757263655f72756e5f6964a0ab736f757263655f7374657000a86d6574616461746180b1736f757263655f636865636b706f696e74c0', 71);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 1, 'ledger.domain.bills:Bill.Opened', '\x85a974696d657374616d70d7ff474f8de06b0fcafeb06f726967696e61746f725f746f706963b86c65646765722e646f6d61696e2e62696c6c733a42696c6ca97072696e636970616ca0aa726571756573745f6964a0a870726f7669646572a674696e6b6572', 75);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 2, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff474f8de06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a66c696e652d30a57374617274d6ff6955b900a3656e64d6ff6955c710a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203962663132363035623862656463313365363430383834356262636362303237b1636f73745f646174615f7468726f756768c0', 76);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 8, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff53b2b2606b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a66c696e652d36a57374617274d6ff69560d60a3656e64d6ff69561b70a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203037626430356433383462646336323663626434323739616636653161326531b1636f73745f646174615f7468726f756768c0', 82);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 14, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff5e2c94e06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3132a57374617274d6ff695661c0a3656e64d6ff69566fd0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203734393433666539306563653761643737383063336235656330653837373333b1636f73745f646174615f7468726f756768c0', 88);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 20, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff81823c606b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3138a57374617274d6ff6956b620a3656e64d6ff6956c430a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203966326265613062653736353034393365666132656261386338643637323834b1636f73745f646174615f7468726f756768c0', 94);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 26, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff957951e06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3234a57374617274d6ff69570a80a3656e64d6ff69571890a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206136393139633435646264656264343535633136376164646537353538626337b1636f73745f646174615f7468726f756768c0', 100);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 32, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffa0ff16806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3330a57374617274d6ff69575ee0a3656e64d6ff69576cf0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203563393830343731373935373361303664333039623733323365306233656266b1636f73745f646174615f7468726f756768c0', 106);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 38, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffb60663806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3336a57374617274d6ff6957b340a3656e64d6ff6957c150a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206365353035333539666565356162393335373863383563313437623035653866b1636f73745f646174615f7468726f756768c0', 112);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 44, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffc8f7c1006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3432a57374617274d6ff695807a0a3656e64d6ff695815b0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203464636130653833616262623637373239623062353061633237653938653362b1636f73745f646174615f7468726f756768c0', 118);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 50, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffdef17c806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3438a57374617274d6ff69585c00a3656e64d6ff69586a10a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206131353566363334343231343538646466376664373765616163356138366333b1636f73745f646174615f7468726f756768c0', 124);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 55, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff075a72406b0fcaffa97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3533a57374617274d6ff6958a250a3656e64d6ff6958b060a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203938653866653335336430336531393430353166396362656364363039333830b1636f73745f646174615f7468726f756768c0', 129);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ae4c2486-c8c8-5f90-97d7-deb719c587b1', 4, 'ledger.domain.tokens:Tokens.TokenRevoked', '\x85a974696d657374616d70d7ff3b01e5606b0fcaffa97072696e636970616ca0aa726571756573745f6964a0a8746f6b656e5f6964b8656461383038663933656634363530326130643131383562a6726561736f6ea7726f7461746564', 136);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 27, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffdc31cfe06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739acce6cce7cce8cce9cceaccebccecccedcceeccefa6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f71bb4a4046ed29cb3f71a7b9611a7b96cb3f719453808ca29ccb3f71811811811812cb3f716e0689427379cb3f715b1e5f75270dcb3f71485f0e0acd3bcb3f7135c81135c811cb3f712358e75d3033cb3f71111111111111a5696e646578c0a6646967657374d9203266306365336136646637633333336265363362363634313335633433613235', 28);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 33, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffe3cc19e06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739acd0122cd0123cd0124cd0125cd0126cd0127cd0128cd0129cd012acd012ba6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f6c26b5392ea01ccb3f6c0e070381c0e0cb3f6bf583ee868d8bcb3f6bdd2b899406f7cb3f6bc4fd65883e7bcb3f6bacf914c1bad0cb3f6b951e2b18ff23cb3f6b7d6c3dda338bcb3f6b65e2e3beee05cb3f6b4e81b4e81b4fa5696e646578c0a6646967657374d9203764646163613939313338336566343331626532386532343232393565386337', 34);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 39, 'ledger.domain.runs:Run.SummaryNoted', '\x84a974696d657374616d70d7ffe8ea48206b0fcafca97072696e636970616ca0aa726571756573745f6964a0a773756d6d61727981a96576616c5f6c6f7373cb3fd0000000000000', 40);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('3b48cd10-bb76-595e-b5ca-182901369599', 1, 'ledger.domain.accounts:Account.Opened', '\x87a974696d657374616d70d7ffea96b0006b0fcafcb06f726967696e61746f725f746f706963be6c65646765722e646f6d61696e2e6163636f756e74733a4163636f756e74a97072696e636970616ca0aa726571756573745f6964a0a46e616d65d92462336234663265352d343037352d356339322d383630352d636134396132336639666361a6706172656e74a0a3636170c0', 42);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b3b4f2e5-4075-5c92-8605-ca49a23f9fca', 1, 'ledger.domain.runs:Run.Opened', '\x89a974696d657374616d70d7ffea96b0006b0fcafcb06f726967696e61746f725f746f706963b66c65646765722e646f6d61696e2e72756e733a52756ea97072696e636970616ca0aa726571756573745f6964a0a772756e5f6b6579b0636f727075732d726574726163746564a46e616d65a9726574726163746564a47370656380a96d61785f7374657073c0a96f626a656374697665c0', 43);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ace54c45-9c66-5f38-8183-2cb2fad9317d', 5, 'ledger.domain.accounts:Account.SpendRolledUp', '\x89a974696d657374616d70d7ff05b6e4006b0fcafda97072696e636970616ca0aa726571756573745f6964a0a56368696c64aa636f727075732d6c6162a3726566a27232a46b696e64a772656c65617365ad70656e64696e675f64656c7461d2fff85ee0af636f6d6d69747465645f64656c746100ad6f76657272756e5f64656c746100', 55);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 6, 'ledger.domain.accounts:Account.SpendReleased', '\x86a974696d657374616d70d7ff05b6e4006b0fcafda97072696e636970616ca0aa726571756573745f6964a0ae7265736572766174696f6e5f6964a27232a6616d6f756e74ce0007a120a6726561736f6eaa6e6f74206e6565646564', 56);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('f90b77ed-8155-519c-b8e2-b04e67be7394', 3, 'ledger.domain.accounts:Account.SpendCommitted', '\x89a974696d657374616d70d7ff0a0639206b0fcafda97072696e636970616ca0aa726571756573745f6964a0ae7265736572766174696f6e5f6964a672756e2d7231a87265736572766564ce000186a0a661637475616cce000186a0a5626173697380a76f76657272756e00a46c617465c2', 65);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('09d1bc64-93ca-5f8a-8cb4-bfafe621689a', 4, 'ledger.domain.registry:Family.VersionPromoted', '\x88a974696d657374616d70d7ff4385a5006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a776657273696f6e01a870726576696f757300a46b696e64a770726f6d6f7465a77665726469637483a6706173736564c3a6726561736f6ea76576616c206f6ba5737461747381a96576616c5f6c6f7373cb3fc999999999999aa6726561736f6ea0', 72);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 3, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff4833e3006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a66c696e652d31a57374617274d6ff6955c710a3656e64d6ff6955d520a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206138353138373236663836623731333931626264656265373762383463383264b1636f73745f646174615f7468726f756768c0', 77);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 9, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff548a17006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a66c696e652d37a57374617274d6ff69561b70a3656e64d6ff69562980a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203365643639663463656364643562333962616331623430346336363839383931b1636f73745f646174615f7468726f756768c0', 83);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 15, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff5f1dcae06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3133a57374617274d6ff69566fd0a3656e64d6ff69567de0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203165303438383532616233333438363639386465393638646439316534663763b1636f73745f646174615f7468726f756768c0', 89);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 21, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff86740b406b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3139a57374617274d6ff6956c430a3656e64d6ff6956d240a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203362326335343461626530336633323162613763613362333965303533353539b1636f73745f646174615f7468726f756768c0', 95);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 27, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff98fc5e206b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3235a57374617274d6ff69571890a3656e64d6ff695726a0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206335363161346362316261616338613835346365333734353562306433336335b1636f73745f646174615f7468726f756768c0', 101);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 33, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffa19432606b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3331a57374617274d6ff69576cf0a3656e64d6ff69577b00a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206438323036303764646561383731366362356633363661383962643130333933b1636f73745f646174615f7468726f756768c0', 107);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 39, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffb6d5d8e06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3337a57374617274d6ff6957c150a3656e64d6ff6957cf60a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203739316366633461313737313666343965633862363233353533316462396134b1636f73745f646174615f7468726f756768c0', 113);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 45, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffcf21e1006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3433a57374617274d6ff695815b0a3656e64d6ff695823c0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206137313232323938373064343231623331613636616163356132643831326162b1636f73745f646174615f7468726f756768c0', 119);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 56, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff0e0d2b006b0fcaffa97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3534a57374617274d6ff6958b060a3656e64d6ff6958be70a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203038303632646365643230343766656462376631373035626266393539363461b1636f73745f646174615f7468726f756768c0', 130);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 28, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffdefb11a06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739accf0ccf1ccf2ccf3ccf4ccf5ccf6ccf7ccf8ccf9a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f70fef010fef011cb3f70ecf56be69c90cb3f70db20a88f4696cb3f70c9714fbcda3bcb3f70b7e6ec259dc8cb3f70a6810a6810a7cb3f70953f39010954cb3f70842108421084cb3f7073260a47f7c6cb3f70624dd2f1a9fca5696e646578c0a6646967657374d9203539303438373937313133376534613837613365333939393662643866653135', 29);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 34, 'ledger.domain.runs:Run.CheckpointSaved', '\x8da974696d657374616d70d7ffe4f315806b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a47374657064a76261636b656e64a56c6f63616ca3757269b066696c653a2f2f2f636b70742f313030a8666964656c697479b1776569676874732b6f7074696d697a6572ab73616d706c65725f757269a0a566696e616cc2aa657870697265735f6174c0a6646967657374d9477368613235363a63636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363a673636f726573c0', 35);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 40, 'ledger.domain.runs:Run.Finished', '\x87a974696d657374616d70d7ffea05ca406b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a6737461747573a4646f6e65a773756d6d61727981a46c6f7373cb3fb999999999999aa56572726f72a0', 41);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('3b48cd10-bb76-595e-b5ca-182901369599', 2, 'ledger.domain.accounts:Account.Retracted', '\x84a974696d657374616d70d7ffec381b606b0fcafca97072696e636970616ca0aa726571756573745f6964a0a6726561736f6eaa6120746573742072756e', 44);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b3b4f2e5-4075-5c92-8605-ca49a23f9fca', 2, 'ledger.domain.runs:Run.Retracted', '\x84a974696d657374616d70d7ffec381b606b0fcafca97072696e636970616ca0aa726571756573745f6964a0a6726561736f6eaa6120746573742072756e', 45);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 1, 'ledger.domain.accounts:Account.Opened', '\x87a974696d657374616d70d7ff0055e0606b0fcafdb06f726967696e61746f725f746f706963be6c65646765722e646f6d61696e2e6163636f756e74733a4163636f756e74a97072696e636970616ca0aa726571756573745f6964a0a46e616d65aa636f727075732d6c6162a6706172656e74ab636f727075732d7465616da3636170ce001e8480', 47);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 7, 'ledger.domain.accounts:Account.SpendRefused', '\x89a974696d657374616d70d7ff06d0b0a06b0fcafda97072696e636970616ca0aa726571756573745f6964a0ae7265736572766174696f6e5f6964a27233a6616d6f756e74ce02faf080a5626173697380a7617474656d707400aa726566757365645f6279aa636f727075732d6c6162a972656d61696e696e67ce00200b20', 57);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ace54c45-9c66-5f38-8183-2cb2fad9317d', 9, 'ledger.domain.accounts:Account.SpendRolledUp', '\x89a974696d657374616d70d7ff3abc7fc06b0fcafea97072696e636970616ca66c6564676572aa726571756573745f6964a0a56368696c64aa636f727075732d6c6162a3726566a27234a46b696e64a6657870697265ad70656e64696e675f64656c7461d1d8f0af636f6d6d69747465645f64656c746100ad6f76657272756e5f64656c746100', 66);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 11, 'ledger.domain.accounts:Account.SpendExpired', '\x85a974696d657374616d70d7ff3abc7fc06b0fcafea97072696e636970616ca66c6564676572aa726571756573745f6964a0ae7265736572766174696f6e5f6964a27234a6616d6f756e74cd2710', 67);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('09d1bc64-93ca-5f8a-8cb4-bfafe621689a', 5, 'ledger.domain.registry:Family.VersionPromoted', '\x88a974696d657374616d70d7ff446af4206b0fcafea97072696e636970616ca0aa726571756573745f6964a0a776657273696f6e02a870726576696f757301a46b696e64a770726f6d6f7465a77665726469637483a6706173736564c3a6726561736f6ea76576616c206f6ba5737461747381a96576616c5f6c6f7373cb3fc999999999999aa6726561736f6ea0', 73);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 4, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff4aaf14606b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a66c696e652d32a57374617274d6ff6955d520a3656e64d6ff6955e330a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203537323437383965643230626662303666616161353634663635333261633165b1636f73745f646174615f7468726f756768c0', 78);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 10, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff555892606b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a66c696e652d38a57374617274d6ff69562980a3656e64d6ff69563790a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203663613330643735643266623736303561303736356562646633303332613932b1636f73745f646174615f7468726f756768c0', 84);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 16, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff614de9806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3134a57374617274d6ff69567de0a3656e64d6ff69568bf0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206238336632323331393962613230373438663230313065613334386332666463b1636f73745f646174615f7468726f756768c0', 90);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 22, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff8b0d79206b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3230a57374617274d6ff6956d240a3656e64d6ff6956e050a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203239326537363335383165653335343461656462656431633964373236363661b1636f73745f646174615f7468726f756768c0', 96);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 28, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff9a2fae006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3236a57374617274d6ff695726a0a3656e64d6ff695734b0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203066383433336637336537633063373538393264653431383030333530643035b1636f73745f646174615f7468726f756768c0', 102);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 34, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffa97c6d806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3332a57374617274d6ff69577b00a3656e64d6ff69578910a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203161306663623263663632613534643339333462303030653235346631373536b1636f73745f646174615f7468726f756768c0', 108);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 40, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffc15e90406b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3338a57374617274d6ff6957cf60a3656e64d6ff6957dd70a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206166663630386631656361626637333538623030356664643461643333356431b1636f73745f646174615f7468726f756768c0', 114);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 46, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffd36d9c406b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3434a57374617274d6ff695823c0a3656e64d6ff695831d0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206164636466633966393236653936343931643461353634666632303064636130b1636f73745f646174615f7468726f756768c0', 120);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 51, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffe275a2006b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3439a57374617274d6ff69586a10a3656e64d6ff69587820a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203361343737306532306439623538323834656563663731633137333564356437b1636f73745f646174615f7468726f756768c0', 125);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ae4c2486-c8c8-5f90-97d7-deb719c587b1', 1, 'ledger.domain.tokens:Tokens.Opened', '\x84a974696d657374616d70d7ff350230c06b0fcaffb06f726967696e61746f725f746f706963bb6c65646765722e646f6d61696e2e746f6b656e733a546f6b656e73a97072696e636970616ca0aa726571756573745f6964a0', 133);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ae4c2486-c8c8-5f90-97d7-deb719c587b1', 2, 'ledger.domain.tokens:Tokens.TokenIssued', '\x89a974696d657374616d70d7ff350230c06b0fcaffa97072696e636970616ca0aa726571756573745f6964a0a8746f6b656e5f6964b8356232373864313334613631346664643264356264346431a6686f6c646572ac636f727075732d61646d696ea4726f6c65a561646d696ea76163636f756e74a0aa657870697265735f6174c0ad7365637265745f736861323536d94032313833333261303637356236613664646166653236363363323232303466623935633931356531373932376237343931333535613866656438666461356335', 134);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 29, 'ledger.domain.runs:Run.StepsRecorded', '\x89a974696d657374616d70d7ffe05f83a06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a573746570739accfaccfbccfcccfdccfeccffcd0100cd0101cd0102cd0103a6746f6b656e73c0a97573645f6d6963726fc0a76d65747269637381a46c6f737382a676616c7565739acb3f705197f7d73404cb3f70410410410410cb3f703091b51f5e1acb3f70204081020408cb3f70101010101010cb3f70000000000000cb3f6fe01fe01fe020cb3f6fc07f01fc07f0cb3f6fa11caa01fa12cb3f6f81f81f81f820a5696e646578c0a6646967657374d9203761383665333865643661303631303739393439333137306464396630376635', 30);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 35, 'ledger.domain.runs:Run.CheckpointSaved', '\x8da974696d657374616d70d7ffe605ece06b0fcafca97072696e636970616ca0aa726571756573745f6964a0a7617474656d707401a473746570ccc8a76261636b656e64a56c6f63616ca3757269b066696c653a2f2f2f636b70742f323030a8666964656c697479b1776569676874732b6f7074696d697a6572ab73616d706c65725f757269a0a566696e616cc2aa657870697265735f6174c0a6646967657374d9477368613235363a63636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363a673636f726573c0', 36);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 2, 'ledger.domain.accounts:Account.CapSet', '\x84a974696d657374616d70d7ff028533e06b0fcafda97072696e636970616ca0aa726571756573745f6964a0a3636170ce002dc6c0', 48);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('ace54c45-9c66-5f38-8183-2cb2fad9317d', 6, 'ledger.domain.accounts:Account.SpendRolledUp', '\x89a974696d657374616d70d7ff074dc0406b0fcafda97072696e636970616ca0aa726571756573745f6964a0a56368696c64aa636f727075732d6c6162a3726566a27234a46b696e64a772657365727665ad70656e64696e675f64656c7461cd2710af636f6d6d69747465645f64656c746100ad6f76657272756e5f64656c746100', 58);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 8, 'ledger.domain.accounts:Account.SpendReserved', '\x88a974696d657374616d70d7ff074dc0406b0fcafda97072696e636970616ca0aa726571756573745f6964a0ae7265736572766174696f6e5f6964a27234a6616d6f756e74cd2710a5626173697380aa657870697265735f6174d7ff074dc0406b0fcafea7617474656d707400', 59);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('09d1bc64-93ca-5f8a-8cb4-bfafe621689a', 6, 'ledger.domain.registry:Family.VersionPromoted', '\x88a974696d657374616d70d7ff46603c406b0fcafea97072696e636970616ca0aa726571756573745f6964a0a776657273696f6e01a870726576696f757302a46b696e64a8726f6c6c6261636ba776657264696374c0a6726561736f6eaa72656772657373696f6e', 74);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 5, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff4bd43b406b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a66c696e652d33a57374617274d6ff6955e330a3656e64d6ff6955f140a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203866646235303336643464373365333563626265303834383736636239303131b1636f73745f646174615f7468726f756768c0', 79);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 11, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff563b12c06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a66c696e652d39a57374617274d6ff69563790a3656e64d6ff695645a0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203132353263643836353833633638613039373466303666613434363530646333b1636f73745f646174615f7468726f756768c0', 85);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 17, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff766bfaa06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3135a57374617274d6ff69568bf0a3656e64d6ff69569a00a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203363303366333230376233666330393434646230636636633461363261663935b1636f73745f646174615f7468726f756768c0', 91);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 23, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff8bc659406b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3231a57374617274d6ff6956e050a3656e64d6ff6956ee60a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203834343564646239316339663333613561623065316431353865313666613365b1636f73745f646174615f7468726f756768c0', 97);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 29, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ff9b2f5b206b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3237a57374617274d6ff695734b0a3656e64d6ff695742c0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206236666362646631666535303232633363393138306361376530623662636236b1636f73745f646174615f7468726f756768c0', 103);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 35, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffab689d806b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3333a57374617274d6ff69578910a3656e64d6ff69579720a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206334653466326639633234626337363065343935663836666431303865356635b1636f73745f646174615f7468726f756768c0', 109);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 41, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffc2611bc06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3339a57374617274d6ff6957dd70a3656e64d6ff6957eb80a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203835393332333362623361366536353864663530643133303166323139636438b1636f73745f646174615f7468726f756768c0', 115);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 47, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffd92c5fe06b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3435a57374617274d6ff695831d0a3656e64d6ff69583fe0a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203163393662653132316436386231613537643631393062373332306535653738b1636f73745f646174615f7468726f756768c0', 121);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 52, 'ledger.domain.bills:Bill.LinesBilled', '\x85a974696d657374616d70d7ffe8d46e606b0fcafea97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918ca76c696e655f6964a76c696e652d3530a57374617274d6ff69587820a3656e64d6ff69588630a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9206234386637306337623133623462626136303366343639666238393366356166b1636f73745f646174615f7468726f756768c0', 126);
INSERT INTO trainledger_corpus.trainledger_events VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 57, 'ledger.domain.bills:Bill.LinesRestated', '\x84a974696d657374616d70d7ff13d005806b0fcaffa97072696e636970616ca0aa726571756573745f6964a0a56c696e6573918da76c696e655f6964a66c696e652d30a57374617274d6ff6955b900a3656e64d6ff6955c710a6616d6f756e74cd0bb8ab616d6f756e745f74657874a8302e303033303030aa7175616e74697469657380a672756e5f6964d92436646635626664372d383763352d353634662d386134302d646235623337643131643831a76163636f756e74a0aa73657373696f6e5f6964a0a47461677380ab6465736372697074696f6ea0a6646967657374d9203866376463643862653161643765613936396437353035373238303461613131a870726576696f757384a6616d6f756e74cd07d0ab616d6f756e745f74657874a8302e303032303030a6646967657374d9203962663132363035623862656463313365363430383834356262636362303237a776657273696f6e02', 131);


--
-- Data for Name: trainledger_events_keys; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:0:9', 4);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:10:19', 5);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:20:29', 6);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:30:39', 7);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:40:49', 8);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:50:59', 9);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:60:69', 10);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:70:79', 11);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:80:89', 12);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:90:99', 13);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:100:109', 14);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:110:119', 15);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:120:129', 16);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:130:139', 17);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:140:149', 18);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:150:159', 19);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:160:169', 20);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:170:179', 21);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:180:189', 22);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:190:199', 23);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:200:209', 24);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:210:219', 25);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:220:229', 26);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:230:239', 27);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:240:249', 28);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:250:259', 29);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:260:269', 30);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:270:279', 31);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:280:289', 32);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'batch:1:290:299', 33);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'session:tinker/session-1', 38);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 'spend:r1', 3);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 'spend:r1', 4);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 'spend:r2', 5);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 'spend:r2', 6);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 'spend:r3', 7);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 'spend:r4', 8);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 'spend:r5', 9);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 'spend:c1', 10);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('f90b77ed-8155-519c-b8e2-b04e67be7394', 'spend:run-r1', 2);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('f90b77ed-8155-519c-b8e2-b04e67be7394', 'spend:run-r1', 3);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 'spend:r4', 11);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-0|1767225600.000000|1767229200.000000', 2);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-1|1767229200.000000|1767232800.000000', 3);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-2|1767232800.000000|1767236400.000000', 4);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-3|1767236400.000000|1767240000.000000', 5);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-4|1767240000.000000|1767243600.000000', 6);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-5|1767243600.000000|1767247200.000000', 7);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-6|1767247200.000000|1767250800.000000', 8);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-7|1767250800.000000|1767254400.000000', 9);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-8|1767254400.000000|1767258000.000000', 10);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-9|1767258000.000000|1767261600.000000', 11);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-10|1767261600.000000|1767265200.000000', 12);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-11|1767265200.000000|1767268800.000000', 13);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-12|1767268800.000000|1767272400.000000', 14);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-13|1767272400.000000|1767276000.000000', 15);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-14|1767276000.000000|1767279600.000000', 16);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-15|1767279600.000000|1767283200.000000', 17);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-16|1767283200.000000|1767286800.000000', 18);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-17|1767286800.000000|1767290400.000000', 19);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-18|1767290400.000000|1767294000.000000', 20);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-19|1767294000.000000|1767297600.000000', 21);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-20|1767297600.000000|1767301200.000000', 22);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-21|1767301200.000000|1767304800.000000', 23);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-22|1767304800.000000|1767308400.000000', 24);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-23|1767308400.000000|1767312000.000000', 25);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-24|1767312000.000000|1767315600.000000', 26);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-25|1767315600.000000|1767319200.000000', 27);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-26|1767319200.000000|1767322800.000000', 28);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-27|1767322800.000000|1767326400.000000', 29);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-28|1767326400.000000|1767330000.000000', 30);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-29|1767330000.000000|1767333600.000000', 31);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-30|1767333600.000000|1767337200.000000', 32);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-31|1767337200.000000|1767340800.000000', 33);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-32|1767340800.000000|1767344400.000000', 34);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-33|1767344400.000000|1767348000.000000', 35);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-34|1767348000.000000|1767351600.000000', 36);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-35|1767351600.000000|1767355200.000000', 37);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-36|1767355200.000000|1767358800.000000', 38);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-37|1767358800.000000|1767362400.000000', 39);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-38|1767362400.000000|1767366000.000000', 40);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-39|1767366000.000000|1767369600.000000', 41);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-40|1767369600.000000|1767373200.000000', 42);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-41|1767373200.000000|1767376800.000000', 43);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-42|1767376800.000000|1767380400.000000', 44);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-43|1767380400.000000|1767384000.000000', 45);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-44|1767384000.000000|1767387600.000000', 46);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-45|1767387600.000000|1767391200.000000', 47);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-46|1767391200.000000|1767394800.000000', 48);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-47|1767394800.000000|1767398400.000000', 49);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-48|1767398400.000000|1767402000.000000', 50);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-49|1767402000.000000|1767405600.000000', 51);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-50|1767405600.000000|1767409200.000000', 52);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-0|1767225600.000000|1767229200.000000', 57);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-51|1767409200.000000|1767412800.000000', 53);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-52|1767412800.000000|1767416400.000000', 54);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('f90b77ed-8155-519c-b8e2-b04e67be7394', 'spend:bill:12d97a13941f0fe2', 4);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-53|1767416400.000000|1767420000.000000', 55);
INSERT INTO trainledger_corpus.trainledger_events_keys VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'line:line-54|1767420000.000000|1767423600.000000', 56);


--
-- Data for Name: trainledger_events_seals; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (1, '\x9b1009d5284abf52194aa53fb958c9c44dc8840697f7925fe3c1597da742a697');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (2, '\x63722fdd89e8c87bff7d54f80be564e7d2df673865b51cc9a814eae32a4664ed');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (3, '\x65c85b7b017bb8487e7ade8f50e29022f4345bbe241e06345828e3a7ae3fb0f8');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (4, '\xaa1da9d4578843482e60f9554e7922b9be70a131085e937b33133b83ae57df67');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (5, '\xb3c562e4b236db5dc3dbc6e24f37cb94053b3443a2f5ec394cac3cd59e12a535');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (6, '\x802d55b6d6c3645484d084b6c0fb12b5d6831d1e01f1849b371e2f8fcaf635a4');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (7, '\x68c92af71bf8deed8dafb0b0742b855510f7db67cc233fdf0dac9a386c12bd05');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (8, '\x8d0ba9563b88b5177400bc4515152d31dfe6e74c0c67c49f056e6e002857c0de');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (9, '\x7bfdb8e14288533220ed16bb0cee45fb20a69cfeedd7aaa064a1896f08571204');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (10, '\x5eeb8a89a8f7c0980995c8b82dda1c15e65f0bd863b20af2c5f3008e80caa8a9');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (11, '\x557adde880c9c0a8f26dfd262b483973f5dba94266b88e8ba616b81950c3789d');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (12, '\xca54fa28fe34f4ea804ab84b076fcce2abe58108c3bba47242131c642033174b');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (13, '\xfd1b6c1c149650af611d355b4006a740f3f10d0f795fc25e6d72b61009be7e89');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (14, '\xb95bcc5777d404219c6a8a66d4a67dfa09f038c7494ec6bc3ebbd141735c3964');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (15, '\x4a10bd4b591bb46198816a61a5fb23b799a78a4197008ed3acc14b5b7c46be3b');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (16, '\x33bed2c79a006a7ba8632be375eeca92c07a2ba45b49c4458da3848d00f5f2c9');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (17, '\xfbb9ba9959e98597cf68e2e16d00d494faf5384b43f99a862965beba6c2082c7');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (18, '\x2de42a9422a79e1abcd88430cdd477a14c1d946f77374670021f66aa93a3a0eb');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (19, '\xe6093f18e0f82220e3c9dfd19b61e22cbbb23aa3ac9a653b44891e2f3f47cb04');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (20, '\x3705f1ae4886569da3978df777d780ac12eddd4e212edd77ad198ba90ca532e5');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (21, '\x259b6040ec54eb7b481ed41baca2c0e674d0d535426118474b4d64b47d0e64e2');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (22, '\x855acf3f32a40f6ae6d5da00af81c2b829e964e644aa9a9178072d6847870744');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (23, '\x70e194bb86165c9f786fb6b3f9a4763c5f3ab3cfc66ed6165fb6c336df9f6cb0');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (24, '\x16acf278f0fbf81eb8b073a60591423a9c349b634e25b03254d6dfc2dbc38e7e');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (25, '\xee76d4154fd327ccaa0d19a5694d42f00b69d8a62a774046938edd8f963f1ba2');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (26, '\xadda152e1f0848752bcfdcfcdfde78e4f007e8e50b1e65717cf9792940ab71f5');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (27, '\x18120422cab00d9704d06483c6d9b5e5c9636560faa3cfcecc0734aaf5f45f6d');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (28, '\xeac78eed37418a03341604a10d8f8ec39a40bca894d61d28002a95a1932ef1ca');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (29, '\xf800bd4a23c048c0dc8f05e55e156265799c90910dee47e37ea72f206fd7e426');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (30, '\xad9b27347e51971b3be07ec87478dcd4a54036337ff1cd9c85300030de8f7e14');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (31, '\x9447f5efa1e204a74933dfcc1388f40a37582654ef137d6794f8aa6a92230082');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (32, '\x411c15d025588695aa9624d7d26016a0117395a2d7598accb7dd39d1b2c169e7');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (33, '\xed2ee718218b38d8a87dfa76a0d6a0d64091afd8bf5af44a107ecd7f16e6b8da');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (34, '\x596e0c6f76833350816f2c22aaf332b02fcbc0da298ee1cf9c90685a21791b4f');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (35, '\x9d4c298b37f0d7a29c8d2285e217ae20943f828ddf538b7f1170327893a49806');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (36, '\x99922e3b86bdf9abd532bd3648a0798bd122b84b2bbc7d42ea47de228b7f2594');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (37, '\x3200aef55a37c771824e8162acb459820598243fe8b71c69d00b941bd6655bbc');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (38, '\xaeac6e5f9560b81c840d2d2228b9fdf8642fd7cd9d6ade5699734ca4671c7987');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (39, '\x6c858c90805a1b9bb1b5b8a728df321f2ccd49a7d9ab21d6542cd1d2789f386a');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (40, '\x9063bb726ace732d4503e0f25aaac2032f9d3975124f6f0d9be36aacdf6524dd');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (41, '\xd24aa741a417a316286a684f94ec97964c9c5e961b8bee829c859e648d3e5f6a');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (42, '\xd668fd0e2cafdd684b1a92825020e28731421f4972e387209cd8ae1d2b4eda8d');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (43, '\xba3fe9e63e23c24bf0f53e51d3cf7f783688b8078d5ac491728fcc7e84b2e254');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (44, '\xf531057ce727eaae1782210cc18427df4fd68cc30c2980a770f6bf3623161762');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (45, '\xb9fa18ab272b3b7373ab941681bbb5c8c840e62506477f5f75812cc1267d1963');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (46, '\xc59c58b2b76d03d1d87e31ac6d424e4e0395bca5356fef94d5377e89f9d266b4');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (47, '\x0215405fc9777f37ed56db7d3b80e0250728b74233135880964672ce2253dc27');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (48, '\x87a2d62edd809ca6a5f3b3c2c1922153e211198e27046fecc4ea0c1ffabfada7');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (49, '\x57c2a121e95e35f81679ccdd8f5d6c9a27c46fc944229f7555ac63664db2f76f');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (50, '\x9770ed0072c024071027e7d5ba6c758dca73d43d861dee56cc2ea49b69846ade');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (51, '\x7ba97bf33900c59de4749a9081a93ec38bb26b412c6718bbf5acdd9d9ea0f53e');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (52, '\x5d97495e1e14f099c4eff682f4c1496d1a9ae2634c2f40fd22513578a27b1c6f');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (53, '\xfc2ad25b8764ec110bafb6af436628051e4e1f7f6a468ff1f23135d5f46e8ff6');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (54, '\x0f9c9b60d2215055939184d69ce546d76c0c39cfab179bf3c33f502bc75320ae');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (55, '\x1934cbe4bddbd4d6fecad65a91e6eac697abc8744cc07359251035852b134f90');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (56, '\xb99677e5edfaa4eec541cda3f42055ed734430dda107b71345ff0bb3e4836c6e');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (57, '\x35ec72a24c23f958697a0ed314a1f2e267473dd750a82a6637972a35052d3136');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (58, '\xd6d2e1509cce95e89d18cb2d6e9752c1a51475ca6179144ed2f376875047c2b7');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (59, '\x7ecfd9ffacd9ba40bf27950dad8f3c130d7474e0d6401fab7faa57834118cb42');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (60, '\xa99d115e43dcd5d695071267b1eaab31354f8dd25b5e5e12d8dad70cfbcc8e3a');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (61, '\xf788b3ae80d8d4839996a045233d3430b9564ff9a8d3dbd84088f97239a22dd6');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (62, '\x6190bb0fe149a409e87ce46f1cdf7428262706f8fec6153bf8b0ccf4462582ef');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (63, '\x05b1530b8063012a0d6c1823e2f923cc7077718af7857c2d57efef89db498208');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (64, '\x6b4a250620a2cf50e2326cf129cc4c0e65c6b0d605bb7dfe8ae6064b654ddfcc');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (65, '\x012a7eec911d2bcbe52bb61b62e303b65bba67e4bf8da663ef2e2d806a7d94ea');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (66, '\x0f21ebccf9d057e2fb274fbaae58230991d8331068830b0c7d24f61d6439f1ae');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (67, '\x25500eb425ae090ddcb4a88e3f2e0085613b157b4413f18af05b1659819b5a4e');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (68, '\xc88217ea1a179b549ac2a1fc232468fdbec9a3742b8e1ba0103fcd8f98fcf031');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (69, '\x98987f37721759e67291f38ed3346258d94904cc0bed9901c152dc5718fd0ba9');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (70, '\xfc741bdbb64310cedbc4e034250c74dc5ee9df8440b4c5468b1e1551ece53776');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (71, '\x2d1f7e5b44690d4f306f27803bdf45ca9d2d76867bf1d5b1f9caaff5c52c847f');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (72, '\xc8be9ff7a29568708e930a624f355af19bdcc7f1db2fb17b0805764af82402fd');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (73, '\xb1c77f70b9d371e408e98171ef95eae6bee7bae4d23cd333ba597b51bb4a5124');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (74, '\x31b40d4a0860d705eb41c45e276ce5ba2928276c50b3ba0bfe417ec0173084b9');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (75, '\xf06ec0f7f75532ddda85d14aa57ae35c7bbb7698ba03e3947147e7fff4a4e87c');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (76, '\x60d808a06d82d272ba13097ab86665e8338619771de32860a1f851c8b9adbb33');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (77, '\xf58aed1799a91e9974839aeb9c35228472f31ee9ab722173421078ee46283894');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (78, '\x48313ce12e4c0fe66a292847b7887c6408113336fac1f1dcf998b59be5430ab3');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (79, '\x1eb3b3d28148d822dc1c31bfc1b9c2f79e365e28e9533f7c0f66fda45868bb84');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (80, '\xaa47bde5701504c3b4a43d444ebfdab79465dfcac88ab7e72208a567575652e2');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (81, '\xc7f9187d950ebed52b60a43e99c25f42f80341868d56f260a5a466eac55106d2');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (82, '\x1eb0f8f154f76d8dee9b0e27087ecf0f742e9bed90e2b96fa3d5a5e45c5c0831');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (83, '\xa313ab91dc90630823c632098f345a1bb7b0ed690398ed51d053a7cbd18765ea');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (84, '\xcea1fad073f9c2c4e5b1fb74af0646fb1ba70515c3eef1d5c78f658fa9111f4e');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (85, '\x8e1fbabe9d09297755a330d336d8d6b5304923657249e0cc1cb23a94a849242a');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (86, '\x6408b768f6f38084022fb4e73b78c555bc1c4ba7fb444a12aba1fe5a288da15a');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (87, '\xdc16db509bf4daeb6c0adf93480974a7fef4c17520e587e584a91752a4d02883');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (88, '\xa4fb4f0a8c9bc2d9a377548c012257a40499c354ad2caeda3f190d6925f17260');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (89, '\x54305984576a87eee6085d89e40aaddb195e707e28bafff4cc07b0883079d2f3');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (90, '\x91f49d9184896c8e3902f14c7826de833206cc47de831b64ed09e3c096857cae');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (91, '\x57354dd5f1c7d56d371347d18a2a1742fa8b8fdae67206a3cc9bd4dc48d44c41');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (92, '\x707cbcd0cc023b9398db0036c926502e35a27e2dd4f1515f6f82c8e1177d3489');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (93, '\x2a2f6afa1e48d5b852dcb0b73f043e8b2521060b3f3a1d0584f77b7ddf7d115d');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (94, '\xd7fec70f9edc05de9bc35b26a35c2fcf1e19c5d55ddca480ec737efc7bd9de5e');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (95, '\x02242437b797e97147ebd0467b68dc8d5d4c7af372370c6b8dce2b0de11dcdeb');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (96, '\x67e74441b07797008ef2b0d8bb834557b2c5e68816ef089f353959a56950c3d4');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (97, '\x2724f65d79106fa11693fd6c63969e39d13ecb4d0bbe629c0fb7b9738702fb66');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (98, '\xb9fbf56dd1a0087e7bc06e2e6b59bb9c926d11df2c151f5636842517b7370b75');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (99, '\xf241bc0b46385b396d04ea8a0342a83d700ca985c3a7d7b809d5348dc21bfd22');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (100, '\xcbfef014e8199174ccfcdca3217025decae1b6867ac066ce3249f2c46f90f4e0');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (101, '\x8996c0c0b913b55075926f9704d5bb0b55c24df03d32016edc314bc96105f918');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (102, '\xd9dc1b2735af06dc54e782425cb1819708720829b144b523e6e1df78e8c3e523');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (103, '\x7e47f3eac025a2ba7573b5b022cdae6ca0cb9ddbb5cd93941ef5d8f14f80cab5');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (104, '\x198a5a894d50b19edb5c9e4db2e54c26f3c2c978c998ab17e7162cd871c0e209');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (105, '\x0ab54fd27662c092c3306e216765468f4c45886f3986b07ebd8eb519f2a68aff');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (106, '\x2a525233beae49c3229e84d40afd39ac400ef51ddad77b24113624e8509735e0');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (107, '\xa8a18eccf6c5edd172d1613b3006c321667b718f753643961ab4e7a2fea8653a');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (108, '\xa5c07b899b573cb0af29965e285327a5b9e2ce8ce703653d6048b7ae2d5cd575');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (114, '\x627b13399f647d529792ee7cb7d2a608454ecee6f7da0012df56d0e935bceca3');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (120, '\x4e70671f15edb39e8174a5ca554b61d43289e801fbb3aeb2605b22a8f10c9d05');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (125, '\x6294a9352a7294276c7dc7a69ea2609ca7eb6ac2dc3a618b21bf0f4fa330d961');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (133, '\x0e5a5e8ad6838991c0a4b9ce787fb1ffde4d366cbd6596ca13e865d034fb9da4');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (134, '\xabc709bdda4c222918736a4736ba492c8ac64039ed2119914ad9af7b9cf9c601');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (109, '\x5900f55f7232c987857bfe03d7975229cc63cb603ea4fd53a5219ccbed07d353');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (115, '\x5087ec4c8ac8e14f444a96a2622551d8f68c2156216d3fb7aa8a0e11bc0cb2da');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (121, '\x9afc57082ceb92ac7762782fa769bf9976e101b82054d55eef868f5d530a339e');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (126, '\x8500f2662b35a1197cdc5de7854205e619dfc52c93a34383b42765870307ceea');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (131, '\xb86d40aca5d9007b7bc6d17fd33c29166e8d9d4bae430c543f10201bdf6c2dd3');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (110, '\x3d17fbcba15674542767e656d6dd574551c3f2a5d47fe4eac71bc5d51a596069');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (116, '\x6af739ef6a9b537de4c05b0eda08b3fc735442c279f37405f34e1601c3da5080');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (122, '\x93bd7e605df0a61e0a1e75223e0c2c130b498371520d170e3fb067610c60d93e');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (127, '\x6096bad30ebe2e2a0358d781e2f5a468d9a628964312724cdca5ff5d4bc37e67');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (135, '\xb138f480d2315a5d5d1f8ed471b266f6fc702cf640496710017d1b9d951d6b52');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (111, '\xe6a02e369ca64f6c80f9a4045918cabeeec9b57fa1da936d572aa0fc8a50ff78');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (117, '\x76a0f4c362a26b43afc4fd4e86fbd7df843872cd996e832a2c3b9e6994601cfe');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (123, '\xed988b726112722d69c82158b8df2a2ebced71f1e47e9d32ae8f0c6857eaaab1');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (128, '\x2eb3e4cca225a8a1fa79b8c278b90a55f62da917f9fd331abe9c0ef2746f79c1');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (132, '\x0ed15af155a0dd5ea8ba1d4fa61ad478dd1870d90a552ca949f7a513e72e0e43');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (112, '\x80b2959a28927ffc43db41f0f7853de159c0114a28249b687b363a6d0a74a6e9');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (118, '\x6b7f2f0e79d53631a50fb045c500b14da350bcfb35af58400a56c52da2f11872');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (124, '\x14e55baed88ec0ead8a98baa48e15a894e541116b964f0b04c4162517918bf64');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (129, '\x2a6e30da84e699435bd6e292e6dc6638c467cbf08121970cf249c178c94974cf');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (136, '\x730e58aee4f8ae1f73277ffc643a9642e9022afa2916cadbe46704321071a11a');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (113, '\xdcf4d4358c84e051c2988902af516db640bbdd2cc99c95c2cc8c2414d34e009a');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (119, '\x45cfd3429c2160ce6f5dd65b43f3e492db1c8367507c1b80e3d8e06f1df9d8d7');
INSERT INTO trainledger_corpus.trainledger_events_seals VALUES (130, '\xa945ca8e1537ecbafcaef0918a9da9e4fada4e7cf0b9c6db30edb12f59ceda21');


--
-- Data for Name: trainledger_snapshots; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.trainledger_snapshots VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 50, 'eventsourcing.domain:Snapshot', '\x83a974696d657374616d70d7ffdfe784e06b0fcafea5746f706963b86c65646765722e646f6d61696e2e62696c6c733a42696c6ca5737461746586ab5f637265617465645f6f6ed7ff474f8de06b0fcafeac5f6d6f6469666965645f6f6ed7ffdef17c806b0fcafea870726f7669646572a674696e6b6572a56c696e657331ac726573746174656d656e747300b1636f73745f646174615f7468726f756768c0');


--
-- Data for Name: view_accounts; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_accounts VALUES ('b3b4f2e5-4075-5c92-8605-ca49a23f9fca', '', NULL, 0, 0, 0, 42);
INSERT INTO trainledger_corpus.view_accounts VALUES ('corpus-team', '', 100000000, 901234, 20000, 0, 66);
INSERT INTO trainledger_corpus.view_accounts VALUES ('corpus-lab', 'corpus-team', 3000000, 901234, 20000, 0, 67);
INSERT INTO trainledger_corpus.view_accounts VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', 5000000, 211000, 0, 0, 132);


--
-- Data for Name: view_attempts; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_attempts VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 1, 'a1', '', 1796197116.764778, NULL, 1);


--
-- Data for Name: view_bill_lines; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-1', 1767229200, 1767232800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 77);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-2', 1767232800, 1767236400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 78);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-3', 1767236400, 1767240000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 79);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-4', 1767240000, 1767243600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 80);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-5', 1767243600, 1767247200, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 81);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-6', 1767247200, 1767250800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 82);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-7', 1767250800, 1767254400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 83);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-8', 1767254400, 1767258000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 84);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-9', 1767258000, 1767261600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 85);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-10', 1767261600, 1767265200, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 86);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-11', 1767265200, 1767268800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 87);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-12', 1767268800, 1767272400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 88);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-13', 1767272400, 1767276000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 89);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-14', 1767276000, 1767279600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 90);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-15', 1767279600, 1767283200, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 91);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-16', 1767283200, 1767286800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 92);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-17', 1767286800, 1767290400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 93);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-18', 1767290400, 1767294000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 94);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-19', 1767294000, 1767297600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 95);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-20', 1767297600, 1767301200, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 96);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-21', 1767301200, 1767304800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 97);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-22', 1767304800, 1767308400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 98);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-23', 1767308400, 1767312000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 99);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-24', 1767312000, 1767315600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 100);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-25', 1767315600, 1767319200, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 101);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-26', 1767319200, 1767322800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 102);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-27', 1767322800, 1767326400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 103);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-28', 1767326400, 1767330000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 104);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-29', 1767330000, 1767333600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 105);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-30', 1767333600, 1767337200, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 106);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-31', 1767337200, 1767340800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 107);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-32', 1767340800, 1767344400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 108);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-33', 1767344400, 1767348000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 109);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-34', 1767348000, 1767351600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 110);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-35', 1767351600, 1767355200, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 111);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-36', 1767355200, 1767358800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 112);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-37', 1767358800, 1767362400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 113);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-38', 1767362400, 1767366000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 114);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-39', 1767366000, 1767369600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 115);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-40', 1767369600, 1767373200, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 116);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-41', 1767373200, 1767376800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 117);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-42', 1767376800, 1767380400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 118);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-43', 1767380400, 1767384000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 119);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-44', 1767384000, 1767387600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 120);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-45', 1767387600, 1767391200, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 121);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-46', 1767391200, 1767394800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 122);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-47', 1767394800, 1767398400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 123);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-48', 1767398400, 1767402000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 124);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-49', 1767402000, 1767405600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 125);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-50', 1767405600, 1767409200, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 126);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-51', 1767409200, 1767412800, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 127);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-52', 1767412800, 1767416400, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 128);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-53', 1767416400, 1767420000, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 129);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-54', 1767420000, 1767423600, 2000, '0.002000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 0, 130);
INSERT INTO trainledger_corpus.view_bill_lines VALUES ('tinker', 'line-0', 1767225600, 1767229200, 3000, '0.003000', '{}', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', '{}', '', 1, 131);


--
-- Data for Name: view_bill_providers; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_bill_providers VALUES ('tinker', 55, 1, NULL, 1767225600, 1767423600, 131);


--
-- Data for Name: view_checkpoint_marks; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_checkpoint_marks VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 1, 200, '{}', NULL, NULL);
INSERT INTO trainledger_corpus.view_checkpoint_marks VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 1, 100, '{}', 1796197116.968534, 'retention');


--
-- Data for Name: view_checkpoints; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_checkpoints VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 1, 100, 'local', 'file:///ckpt/100', 'weights+optimizer', '', 0, 1796197116.960284, NULL, 'sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc', 0);
INSERT INTO trainledger_corpus.view_checkpoints VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 1, 200, 'local', 'file:///ckpt/200', 'weights+optimizer', '', 0, 1796197116.964787, NULL, 'sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc', 0);


--
-- Data for Name: view_datasets; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_datasets VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'train', 'sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc', 'jsonl', 1000, 50000, '', '{}', 1796197116.971094, 38);


--
-- Data for Name: view_families; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_families VALUES ('corpus-model', 1, 74);


--
-- Data for Name: view_names; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_names VALUES ('f90b77ed-8155-519c-b8e2-b04e67be7394', '6df5bfd7-87c5-564f-8a40-db5b37d11d81');
INSERT INTO trainledger_corpus.view_names VALUES ('3b48cd10-bb76-595e-b5ca-182901369599', 'b3b4f2e5-4075-5c92-8605-ca49a23f9fca');
INSERT INTO trainledger_corpus.view_names VALUES ('ace54c45-9c66-5f38-8183-2cb2fad9317d', 'corpus-team');
INSERT INTO trainledger_corpus.view_names VALUES ('bc3ff126-8a5d-5f71-966f-c10e9561ea68', 'corpus-lab');
INSERT INTO trainledger_corpus.view_names VALUES ('09d1bc64-93ca-5f8a-8cb4-bfafe621689a', 'corpus-model');
INSERT INTO trainledger_corpus.view_names VALUES ('b1689749-94c5-522a-81e3-382b1ce38e58', 'tinker');


--
-- Data for Name: view_promotions; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_promotions VALUES ('corpus-model', 72, 1, 0, 'promote', '{"passed":true,"reason":"eval ok","stats":{"eval_loss":0.2}}', '', 1796197118.283208, '');
INSERT INTO trainledger_corpus.view_promotions VALUES ('corpus-model', 73, 2, 1, 'promote', '{"passed":true,"reason":"eval ok","stats":{"eval_loss":0.2}}', '', 1796197118.286965, '');
INSERT INTO trainledger_corpus.view_promotions VALUES ('corpus-model', 74, 1, 2, 'rollback', 'null', 'regression', 1796197118.295178, '');


--
-- Data for Name: view_registered_points; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_registered_points VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'corpus-model', 1, 1, 200);


--
-- Data for Name: view_reservations; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_reservations VALUES ('corpus-lab', 'r1', 'reservation', 'committed', 1000000, 900000, 0, '{}', '{}', '', 0, 1796197117.013433, 1796197117.0172, 1796198017.013433, 50);
INSERT INTO trainledger_corpus.view_reservations VALUES ('corpus-lab', 'r2', 'reservation', 'released', 500000, 0, 0, '{}', '{}', 'not needed', 0, 1796197117.021775, 1796197117.023968, 1796198017.021775, 54);
INSERT INTO trainledger_corpus.view_reservations VALUES ('corpus-lab', 'r3', 'reservation', 'refused', 50000000, 0, 0, '{}', '{}', 'cap of corpus-lab would be crossed: 2100000 remained', 0, 1796197117.028585, 1796197117.028585, NULL, 57);
INSERT INTO trainledger_corpus.view_reservations VALUES ('corpus-lab', 'r5', 'reservation', 'pending', 20000, 0, 0, '{}', '{}', '', 0, 1796197117.033296, NULL, 1796198017.033296, 61);
INSERT INTO trainledger_corpus.view_reservations VALUES ('corpus-lab', 'c1', 'charge', 'charged', 1234, 1234, 0, '{}', '{}', 'storage', 0, 1796197117.036855, 1796197117.036855, NULL, 63);
INSERT INTO trainledger_corpus.view_reservations VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'run-r1', 'reservation', 'committed', 100000, 100000, 0, '{}', '{}', '', 0, 1796197117.040053, 1796197117.042045, 1796198017.040053, 64);
INSERT INTO trainledger_corpus.view_reservations VALUES ('corpus-lab', 'r4', 'reservation', 'expired', 10000, 0, 0, '{}', '{}', '', 0, 1796197117.030634, 1796197118.246358, 1796197118.030634, 59);
INSERT INTO trainledger_corpus.view_reservations VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'bill:12d97a13941f0fe2', 'adjustment', 'adjusted', 111000, 111000, 0, '{"bill":{"billed_usd_micro":111000,"provisional_usd_micro":0,"estimated_usd_micro":100000,"covered_estimate_usd_micro":0,"lines":55,"providers":["tinker"],"drift_usd_micro":111000,"adjusted_before_usd_micro":0}}', '{}', 'brought to the provider''s bill', 0, 1796197119.122063, 1796197119.122063, NULL, 132);


--
-- Data for Name: view_run_plans; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_run_plans VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', '', 400, NULL, NULL, NULL, 1796197116.77898, 9, 1796197116.77898, 9, 1796197116.955451, 299, 34);
INSERT INTO trainledger_corpus.view_run_plans VALUES ('b3b4f2e5-4075-5c92-8605-ca49a23f9fca', '', '', NULL, 'a test run', '', 1796197116.990775, NULL, NULL, NULL, NULL, NULL, NULL, 45);


--
-- Data for Name: view_run_sessions; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_run_sessions VALUES ('tinker', 'session-1', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', 1, 39);


--
-- Data for Name: view_runs; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_runs VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'corpus-run', 'corpus', 'done', '{"lr":0.0001}', '{"eval_loss":0.25,"loss":0.1}', '', 1796197116.742364, 1796197116.981562, 1, 299, 41);
INSERT INTO trainledger_corpus.view_runs VALUES ('b3b4f2e5-4075-5c92-8605-ca49a23f9fca', 'corpus-retracted', 'retracted', 'running', '{}', '{}', '', 1796197116.983936, NULL, 0, NULL, 43);


--
-- Data for Name: view_series; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 0, 1, 9, NULL, 10, 5);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 10, 1, 19, NULL, 10, 6);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 20, 1, 29, NULL, 10, 7);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 30, 1, 39, NULL, 10, 8);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 40, 1, 49, NULL, 10, 9);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 50, 1, 59, NULL, 10, 10);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 60, 1, 69, NULL, 10, 11);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 70, 1, 79, NULL, 10, 12);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 80, 1, 89, NULL, 10, 13);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 90, 1, 99, NULL, 10, 14);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 100, 1, 109, NULL, 10, 15);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 110, 1, 119, NULL, 10, 16);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 120, 1, 129, NULL, 10, 17);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 130, 1, 139, NULL, 10, 18);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 140, 1, 149, NULL, 10, 19);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 150, 1, 159, NULL, 10, 20);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 160, 1, 169, NULL, 10, 21);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 170, 1, 179, NULL, 10, 22);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 180, 1, 189, NULL, 10, 23);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 190, 1, 199, NULL, 10, 24);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 200, 1, 209, NULL, 10, 25);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 210, 1, 219, NULL, 10, 26);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 220, 1, 229, NULL, 10, 27);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 230, 1, 239, NULL, 10, 28);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 240, 1, 249, NULL, 10, 29);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 250, 1, 259, NULL, 10, 30);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 260, 1, 269, NULL, 10, 31);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 270, 1, 279, NULL, 10, 32);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 280, 1, 289, NULL, 10, 33);
INSERT INTO trainledger_corpus.view_series VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 290, 1, 299, NULL, 10, 34);


--
-- Data for Name: view_series_rollup; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_series_rollup VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'loss', 64, 4, 1, 44, 256, 0.0038910505836575876, 299, 0.0033333333333333335, 299, 0.0033333333333333335, 256, 0.0038910505836575876, 34);
INSERT INTO trainledger_corpus.view_series_rollup VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'loss', 512, 0, 1, 300, 0, 1, 299, 0.0033333333333333335, 299, 0.0033333333333333335, 0, 1, 34);
INSERT INTO trainledger_corpus.view_series_rollup VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'loss', 4096, 0, 1, 300, 0, 1, 299, 0.0033333333333333335, 299, 0.0033333333333333335, 0, 1, 34);
INSERT INTO trainledger_corpus.view_series_rollup VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'loss', 32768, 0, 1, 300, 0, 1, 299, 0.0033333333333333335, 299, 0.0033333333333333335, 0, 1, 34);
INSERT INTO trainledger_corpus.view_series_rollup VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', '', 32768, 0, 1, 300, 0, 0, 299, 0, 0, 0, 0, 0, 34);
INSERT INTO trainledger_corpus.view_series_rollup VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'loss', 64, 1, 1, 64, 64, 0.015384615384615385, 127, 0.0078125, 127, 0.0078125, 64, 0.015384615384615385, 17);
INSERT INTO trainledger_corpus.view_series_rollup VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'loss', 64, 2, 1, 64, 128, 0.007751937984496124, 191, 0.005208333333333333, 191, 0.005208333333333333, 128, 0.007751937984496124, 24);
INSERT INTO trainledger_corpus.view_series_rollup VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'loss', 64, 0, 1, 64, 0, 1, 63, 0.015625, 63, 0.015625, 0, 1, 11);
INSERT INTO trainledger_corpus.view_series_rollup VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 'loss', 64, 3, 1, 64, 192, 0.0051813471502590676, 255, 0.00390625, 255, 0.00390625, 192, 0.0051813471502590676, 30);


--
-- Data for Name: view_spend_hours; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_spend_hours VALUES ('corpus-lab', 1796194800, 901234, 0);
INSERT INTO trainledger_corpus.view_spend_hours VALUES ('6df5bfd7-87c5-564f-8a40-db5b37d11d81', 1796194800, 100000, 111000);


--
-- Data for Name: view_spend_tokens; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--



--
-- Data for Name: view_tracking; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_tracking VALUES ('runs', 136);
INSERT INTO trainledger_corpus.view_tracking VALUES ('series', 136);
INSERT INTO trainledger_corpus.view_tracking VALUES ('spend', 136);
INSERT INTO trainledger_corpus.view_tracking VALUES ('registry', 136);
INSERT INTO trainledger_corpus.view_tracking VALUES ('bill', 136);
INSERT INTO trainledger_corpus.view_tracking VALUES ('chart', 136);
INSERT INTO trainledger_corpus.view_tracking VALUES ('provenance', 136);


--
-- Data for Name: view_version_sources; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_version_sources VALUES ('corpus-model', 1, '6df5bfd7-87c5-564f-8a40-db5b37d11d81', 200, 1, 'sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc');


--
-- Data for Name: view_versions; Type: TABLE DATA; Schema: trainledger_corpus; Owner: -
--

INSERT INTO trainledger_corpus.view_versions VALUES ('corpus-model', 1, 'file:///models/1', 'sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc', '6df5bfd7-87c5-564f-8a40-db5b37d11d81', 200, '{}', 1796197118.259124, '');
INSERT INTO trainledger_corpus.view_versions VALUES ('corpus-model', 2, 'file:///models/2', 'sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd', '', 0, '{}', 1796197118.274828, '');


--
-- Name: trainledger_events_notification_id_seq; Type: SEQUENCE SET; Schema: trainledger_corpus; Owner: -
--

SELECT pg_catalog.setval('trainledger_corpus.trainledger_events_notification_id_seq', 136, true);


--
-- Name: ledger_schema ledger_schema_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.ledger_schema
    ADD CONSTRAINT ledger_schema_pkey PRIMARY KEY (name);


--
-- Name: trainledger_events_keys trainledger_events_keys_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.trainledger_events_keys
    ADD CONSTRAINT trainledger_events_keys_pkey PRIMARY KEY (originator_id, key, originator_version);


--
-- Name: trainledger_events trainledger_events_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.trainledger_events
    ADD CONSTRAINT trainledger_events_pkey PRIMARY KEY (originator_id, originator_version);


--
-- Name: trainledger_events_seals trainledger_events_seals_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.trainledger_events_seals
    ADD CONSTRAINT trainledger_events_seals_pkey PRIMARY KEY ("position");


--
-- Name: trainledger_snapshots trainledger_snapshots_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.trainledger_snapshots
    ADD CONSTRAINT trainledger_snapshots_pkey PRIMARY KEY (originator_id, originator_version);


--
-- Name: view_accounts view_accounts_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_accounts
    ADD CONSTRAINT view_accounts_pkey PRIMARY KEY (account);


--
-- Name: view_attempts view_attempts_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_attempts
    ADD CONSTRAINT view_attempts_pkey PRIMARY KEY (run_id, number);


--
-- Name: view_bill_lines view_bill_lines_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_bill_lines
    ADD CONSTRAINT view_bill_lines_pkey PRIMARY KEY (provider, line_id, start, end_at);


--
-- Name: view_bill_providers view_bill_providers_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_bill_providers
    ADD CONSTRAINT view_bill_providers_pkey PRIMARY KEY (provider);


--
-- Name: view_checkpoint_marks view_checkpoint_marks_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_checkpoint_marks
    ADD CONSTRAINT view_checkpoint_marks_pkey PRIMARY KEY (run_id, attempt, step);


--
-- Name: view_checkpoints view_checkpoints_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_checkpoints
    ADD CONSTRAINT view_checkpoints_pkey PRIMARY KEY (run_id, attempt, step);


--
-- Name: view_datasets view_datasets_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_datasets
    ADD CONSTRAINT view_datasets_pkey PRIMARY KEY (run_id, role, digest);


--
-- Name: view_families view_families_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_families
    ADD CONSTRAINT view_families_pkey PRIMARY KEY (family);


--
-- Name: view_names view_names_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_names
    ADD CONSTRAINT view_names_pkey PRIMARY KEY (id);


--
-- Name: view_promotions view_promotions_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_promotions
    ADD CONSTRAINT view_promotions_pkey PRIMARY KEY (family, "position");


--
-- Name: view_registered_points view_registered_points_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_registered_points
    ADD CONSTRAINT view_registered_points_pkey PRIMARY KEY (run_id, family, version);


--
-- Name: view_reservations view_reservations_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_reservations
    ADD CONSTRAINT view_reservations_pkey PRIMARY KEY (account, reservation_id);


--
-- Name: view_run_plans view_run_plans_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_run_plans
    ADD CONSTRAINT view_run_plans_pkey PRIMARY KEY (run_id);


--
-- Name: view_run_sessions view_run_sessions_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_run_sessions
    ADD CONSTRAINT view_run_sessions_pkey PRIMARY KEY (provider, session_id);


--
-- Name: view_runs view_runs_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_runs
    ADD CONSTRAINT view_runs_pkey PRIMARY KEY (run_id);


--
-- Name: view_series view_series_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_series
    ADD CONSTRAINT view_series_pkey PRIMARY KEY (run_id, first_step, attempt);


--
-- Name: view_series_rollup view_series_rollup_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_series_rollup
    ADD CONSTRAINT view_series_rollup_pkey PRIMARY KEY (run_id, metric, level, bucket, attempt);


--
-- Name: view_spend_hours view_spend_hours_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_spend_hours
    ADD CONSTRAINT view_spend_hours_pkey PRIMARY KEY (account, hour);


--
-- Name: view_spend_tokens view_spend_tokens_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_spend_tokens
    ADD CONSTRAINT view_spend_tokens_pkey PRIMARY KEY (account, hour, token_class);


--
-- Name: view_tracking view_tracking_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_tracking
    ADD CONSTRAINT view_tracking_pkey PRIMARY KEY (view);


--
-- Name: view_version_sources view_version_sources_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_version_sources
    ADD CONSTRAINT view_version_sources_pkey PRIMARY KEY (family, version);


--
-- Name: view_versions view_versions_pkey; Type: CONSTRAINT; Schema: trainledger_corpus; Owner: -
--

ALTER TABLE ONLY trainledger_corpus.view_versions
    ADD CONSTRAINT view_versions_pkey PRIMARY KEY (family, version);


--
-- Name: idx_view_accounts_parent; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_accounts_parent ON trainledger_corpus.view_accounts USING btree (parent);


--
-- Name: idx_view_bill_lines_account; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_bill_lines_account ON trainledger_corpus.view_bill_lines USING btree (account);


--
-- Name: idx_view_bill_lines_provider_session_id; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_bill_lines_provider_session_id ON trainledger_corpus.view_bill_lines USING btree (provider, session_id);


--
-- Name: idx_view_bill_lines_run_id; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_bill_lines_run_id ON trainledger_corpus.view_bill_lines USING btree (run_id);


--
-- Name: idx_view_checkpoints_run_id_superseded_expires_at_step_attempt; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_checkpoints_run_id_superseded_expires_at_step_attempt ON trainledger_corpus.view_checkpoints USING btree (run_id, superseded, expires_at, step, attempt);


--
-- Name: idx_view_checkpoints_run_id_superseded_step_attempt; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_checkpoints_run_id_superseded_step_attempt ON trainledger_corpus.view_checkpoints USING btree (run_id, superseded, step, attempt);


--
-- Name: idx_view_reservations_account_position; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_reservations_account_position ON trainledger_corpus.view_reservations USING btree (account, "position");


--
-- Name: idx_view_reservations_state_expires_at; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_reservations_state_expires_at ON trainledger_corpus.view_reservations USING btree (state, expires_at);


--
-- Name: idx_view_run_sessions_run_id; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_run_sessions_run_id ON trainledger_corpus.view_run_sessions USING btree (run_id);


--
-- Name: idx_view_runs_opened_at_run_id; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_runs_opened_at_run_id ON trainledger_corpus.view_runs USING btree (opened_at, run_id);


--
-- Name: idx_view_runs_status_opened_at_run_id; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_runs_status_opened_at_run_id ON trainledger_corpus.view_runs USING btree (status, opened_at, run_id);


--
-- Name: idx_view_series_run_id_superseded_above_first_step_attempt; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE INDEX idx_view_series_run_id_superseded_above_first_step_attempt ON trainledger_corpus.view_series USING btree (run_id, superseded_above, first_step, attempt);


--
-- Name: trainledger_events_notification_id_idx; Type: INDEX; Schema: trainledger_corpus; Owner: -
--

CREATE UNIQUE INDEX trainledger_events_notification_id_idx ON trainledger_corpus.trainledger_events USING btree (notification_id);


--
-- PostgreSQL database dump complete
--


