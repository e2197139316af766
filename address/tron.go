package address

// tronVersion is the version byte of every TRON mainnet address; it is what
// makes the base58 form start with "T".
const tronVersion = 0x41

// Tron validates a TRON address: base58check (double-SHA256 checksum) of 21
// bytes, version 0x41 and a 20-byte account hash, which always encodes to 34
// characters starting with "T". The hex form ("41..." or "0x...") is refused
// because it has no checksum.
func Tron(addr string) error {
	if err := precheck(addr); err != nil {
		return err
	}
	if addr[0] != 'T' {
		return invalid(`must start with "T"`)
	}
	if len(addr) != 34 {
		return invalid("want 34 characters, got %d", len(addr))
	}
	version, payload, err := decodeBase58Check(addr)
	if err != nil {
		return err
	}
	if len(payload) != 20 {
		return invalid("decodes to %d bytes, want 25", len(payload)+5)
	}
	if version != tronVersion {
		return invalid("unsupported version byte 0x%02x", version)
	}
	return nil
}
