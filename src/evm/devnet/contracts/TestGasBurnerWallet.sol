// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title TestGasBurnerWallet
/// @notice A HOSTILE TEST contract wallet for the facilitator's own tests: it accepts every EIP-1271
///         signature, and in a transaction that pays for gas it burns `burnGas` first. A simulation
///         or an estimate (gas price 0) sees an ordinary wallet; the settlement runs out of gas.
///         What it shows: the token is not to blame for what the payer's own wallet burns.
/// @dev    Placed with `anvil_setCode` (no constructor).
contract TestGasBurnerWallet {
    bytes4 private constant MAGIC_VALUE = 0x1626ba7e;

    uint256 public burnGas;

    function configure(uint256 gasToBurn) external {
        burnGas = gasToBurn;
    }

    function isValidSignature(bytes32, bytes calldata) external view returns (bytes4) {
        if (tx.gasprice > 0) {
            uint256 start = gasleft();
            uint256 spin;
            while (start - gasleft() < burnGas) {
                spin++;
            }
        }
        return MAGIC_VALUE;
    }
}
