-- An API key's controls (contract section 10): the writes it may make,
-- comma-separated ("orders:write,payouts:write"; empty: read-only), and the
-- client address ranges it may be used from, comma-separated CIDR ranges
-- (empty: any address). Keys made before them keep every scope and any
-- address, so nothing changes for them.
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'orders:write,payouts:write';
ALTER TABLE api_keys ADD COLUMN allow_ips TEXT NOT NULL DEFAULT '';
