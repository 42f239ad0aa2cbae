// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title TestGasBurnerToken
/// @notice A HOSTILE TEST token for the facilitator's own tests: it looks like USDC to every read
///         (name "USDC", version "2", 6 decimals, a large balance for anyone) and accepts any
///         EIP-3009 authorization, but its `transferWithAuthorization` only marks the nonce, then
///         burns gas and returns: no Transfer event, no revert. It is what a payer names as
///         `asset` to make a facilitator spend its own gas.
/// @dev    Placed with `anvil_setCode` (no constructor). `burnGas` is how much gas a transfer burns;
///         with `onlyWhenPriced` it burns only in a transaction that pays for gas, so a simulation
///         or an estimate (gas price 0) sees a cheap transfer and the real one is not.
contract TestGasBurnerToken {
    string public constant name = "USDC";
    string public constant symbol = "USDC";
    string public constant version = "2";
    uint8 public constant decimals = 6;

    uint256 public burnGas;
    bool public onlyWhenPriced;
    mapping(address => mapping(bytes32 => bool)) private _used;

    function configure(uint256 gasToBurn, bool priced) external {
        burnGas = gasToBurn;
        onlyWhenPriced = priced;
    }

    function balanceOf(address) external pure returns (uint256) {
        return 1e30;
    }

    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _used[authorizer][nonce];
    }

    function transferWithAuthorization(
        address from,
        address,
        uint256,
        uint256,
        uint256,
        bytes32 nonce,
        uint8,
        bytes32,
        bytes32
    ) external {
        _consume(from, nonce);
    }

    function transferWithAuthorization(
        address from,
        address,
        uint256,
        uint256,
        uint256,
        bytes32 nonce,
        bytes memory
    ) external {
        _consume(from, nonce);
    }

    function _consume(address from, bytes32 nonce) private {
        require(!_used[from][nonce], "FiatTokenV2: authorization is used or canceled");
        _used[from][nonce] = true;
        if (onlyWhenPriced && tx.gasprice == 0) return;
        uint256 start = gasleft();
        uint256 spin;
        while (start - gasleft() < burnGas) {
            spin++;
        }
    }
}
