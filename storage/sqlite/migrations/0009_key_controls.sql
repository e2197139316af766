-- Reserved for the key scopes and key address allowlists of contract
-- section 10 (branch keyctl, which writes this migration); a placeholder
-- here so that 0010 follows 0009. The merge with keyctl takes its file.
SELECT 1;
