// Package evm is a payoutkit.Processor that pays out on EVM networks.
package evm
