// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {X402BatchSignatures} from "./X402BatchSignatures.sol";
import {
    BatchTokenTransfer,
    IBatchToken,
    IDepositCollector
} from "./X402DepositCollectorBase.sol";

/// @title X402BatchSettlement
/// @notice A TEST re-implementation of the x402 `batch-settlement` contract (unidirectional
///         payment channels), ABI-compatible with the `batchSettlementABI` the x402 EVM package
///         exports: same functions, EIP-712 domain {"x402 Batch Settlement", "1"}, typehashes,
///         channel ids, digests, events and errors, so the official client, server and
///         facilitator work against it unchanged.
/// @dev    Placed with `anvil_setCode` at 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003: no
///         constructor runs, so the domain separator is computed on each call from
///         `block.chainid` and `address(this)`, and the reentrancy guard lives in transient
///         storage (zero at the start of every transaction).
///         A channel holds `balance` (all deposits, less refunds and withdrawals) of which
///         `totalClaimed` belongs to the receiver; claimed money stays here until `settle`
///         sweeps a receiver's claims for a token in one transfer.
contract X402BatchSettlement {
    /// @notice Everything that identifies a channel; its EIP-712 hash is the channel id.
    struct ChannelConfig {
        address payer;
        /// @dev If set, this key (not the payer) signs vouchers, and only with plain ECDSA.
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    struct ChannelState {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct WithdrawalState {
        uint128 amount;
        /// @dev Zero when no withdrawal is pending.
        uint40 initiatedAt;
    }

    struct ReceiverState {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    /// @dev `totalClaimed` is the new cumulative total, not a delta: replaying a claim is a no-op.
    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    uint40 public constant MIN_WITHDRAW_DELAY = 15 minutes;
    uint40 public constant MAX_WITHDRAW_DELAY = 30 days;

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH =
        keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH =
        keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );

    bytes32 private constant DOMAIN_TYPEHASH = keccak256(
        "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
    );
    bytes32 private constant NAME_HASH = keccak256("x402 Batch Settlement");
    bytes32 private constant VERSION_HASH = keccak256("1");

    mapping(bytes32 channelId => ChannelState) public channels;
    /// @dev Bumped by every refund, so a signed `Refund` is good for one refund only.
    mapping(bytes32 channelId => uint256) public refundNonce;
    mapping(bytes32 channelId => WithdrawalState) public pendingWithdrawals;
    mapping(address receiver => mapping(address token => ReceiverState)) public receivers;

    bool private transient _entered;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);
    /// @dev Part of the ABI of the x402 contract (ERC-5267); never emitted: the domain is fixed.
    event EIP712DomainChanged();

    error InvalidChannel();
    error ZeroDeposit();
    error DepositOverflow();
    error InvalidSignature();
    error NotReceiverAuthorizer();
    error NotAuthorizedToClaim();
    error NotAuthorizedToRefund();
    error ClaimExceedsCeiling();
    error ClaimExceedsBalance();
    error WithdrawalAlreadyPending();
    error WithdrawalNotPending();
    error NotAuthorizedToFinalizeWithdraw();
    error WithdrawDelayNotElapsed();
    error NothingToWithdraw();
    error WithdrawAmountExceedsAvailable();
    error WithdrawDelayOutOfRange();
    error EmptyBatch();
    error DepositCollectionFailed();
    error InvalidCollector();
    error InvalidRefundNonce();
    error ZeroRefund();
    error ReentrancyGuardReentrantCall();
    /// @dev A multicall step reverted without data.
    error FailedCall();

    modifier nonReentrant() {
        if (_entered) revert ReentrancyGuardReentrantCall();
        _entered = true;
        _;
        _entered = false;
    }

    // ---------------------------------------------------------------------------------------
    // Deposits
    // ---------------------------------------------------------------------------------------

    /// @notice Adds `amount` to a channel (opening it on first use), pulled from the payer by
    ///         `collector` with the payer's proof in `collectorData`. Anyone may call: the
    ///         collector's proof is what authorises the pull.
    function deposit(
        ChannelConfig calldata config,
        uint128 amount,
        address collector,
        bytes calldata collectorData
    ) external nonReentrant {
        if (
            config.payer == address(0) || config.receiver == address(0)
                || config.receiverAuthorizer == address(0) || config.token == address(0)
        ) revert InvalidChannel();
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY)
        {
            revert WithdrawDelayOutOfRange();
        }
        if (amount == 0) revert ZeroDeposit();
        if (collector == address(0)) revert InvalidCollector();

        bytes32 channelId = getChannelId(config);
        ChannelState storage ch = channels[channelId];
        if (amount > type(uint128).max - ch.balance) revert DepositOverflow();
        ch.balance += amount;

        // Trust the collector for nothing but the money actually arriving: a collector that
        // pulls less (or a fee-on-transfer token) fails the deposit.
        IBatchToken token = IBatchToken(config.token);
        uint256 before = token.balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, config.token, amount, channelId, collectorData);
        if (token.balanceOf(address(this)) != before + amount) revert DepositCollectionFailed();

        if (ch.balance == amount && ch.totalClaimed == 0) emit ChannelCreated(channelId, config);
        emit Deposited(channelId, msg.sender, amount, ch.balance);
    }

    // ---------------------------------------------------------------------------------------
    // Claims and settlement
    // ---------------------------------------------------------------------------------------

    /// @notice Records voucher claims; the caller must be each channel's receiver or receiver
    ///         authorizer.
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        if (voucherClaims.length == 0) revert EmptyBatch();
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            if (!_isReceiverSide(msg.sender, voucherClaims[i].voucher.channel)) {
                revert NotAuthorizedToClaim();
            }
            _claim(voucherClaims[i]);
        }
    }

    /// @notice Records voucher claims authorised by the receiver authorizer's `ClaimBatch`
    ///         signature; anyone may relay it. Every row must name the same authorizer.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        if (voucherClaims.length == 0) revert EmptyBatch();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        if (!X402BatchSignatures.isValidNow(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature)) {
            revert InvalidSignature();
        }
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) {
                revert NotReceiverAuthorizer();
            }
            _claim(voucherClaims[i]);
        }
    }

    /// @notice Pays `receiver` everything claimed for it in `token` and not yet paid. Anyone may
    ///         call; with nothing to pay it does nothing (no revert, no event).
    function settle(address receiver, address token) external nonReentrant {
        ReceiverState storage rs = receivers[receiver][token];
        uint128 amount = rs.totalClaimed - rs.totalSettled;
        if (amount == 0) return;
        rs.totalSettled = rs.totalClaimed;
        BatchTokenTransfer.safeTransfer(token, receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // ---------------------------------------------------------------------------------------
    // The payer's exit: a timed withdrawal, so the receiver side has `withdrawDelay` to claim
    // ---------------------------------------------------------------------------------------

    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) revert InvalidChannel();
        if (amount == 0) revert NothingToWithdraw();
        bytes32 channelId = getChannelId(config);
        WithdrawalState storage ws = pendingWithdrawals[channelId];
        if (ws.initiatedAt != 0) revert WithdrawalAlreadyPending();
        ChannelState storage ch = channels[channelId];
        if (amount > ch.balance - ch.totalClaimed) revert WithdrawAmountExceedsAvailable();
        ws.amount = amount;
        ws.initiatedAt = uint40(block.timestamp);
        emit WithdrawInitiated(channelId, amount, uint40(block.timestamp) + config.withdrawDelay);
    }

    /// @notice Pays the pending withdrawal once the delay is over, capped by what is still
    ///         unclaimed now (claims made during the delay come first).
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        if (msg.sender != config.payer && msg.sender != config.payerAuthorizer) {
            revert NotAuthorizedToFinalizeWithdraw();
        }
        bytes32 channelId = getChannelId(config);
        WithdrawalState storage ws = pendingWithdrawals[channelId];
        if (ws.initiatedAt == 0) revert WithdrawalNotPending();
        if (block.timestamp < uint256(ws.initiatedAt) + config.withdrawDelay) {
            revert WithdrawDelayNotElapsed();
        }
        ChannelState storage ch = channels[channelId];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 amount = ws.amount > available ? available : ws.amount;
        ws.amount = 0;
        ws.initiatedAt = 0;
        ch.balance -= amount;
        emit WithdrawFinalized(channelId, msg.sender, amount);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(channelId, config);
        if (amount > 0) BatchTokenTransfer.safeTransfer(config.token, config.payer, amount);
    }

    // ---------------------------------------------------------------------------------------
    // Cooperative refunds (the receiver side returns unclaimed money at once)
    // ---------------------------------------------------------------------------------------

    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (!_isReceiverSide(msg.sender, config)) revert NotAuthorizedToRefund();
        _refund(config, amount);
    }

    /// @notice A refund signed by the receiver authorizer for the channel's current refund
    ///         nonce; anyone may relay it.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 channelId = getChannelId(config);
        if (nonce != refundNonce[channelId]) revert InvalidRefundNonce();
        bytes32 digest = getRefundDigest(channelId, nonce, amount);
        if (!X402BatchSignatures.isValidNow(config.receiverAuthorizer, digest, receiverAuthorizerSignature)) {
            revert InvalidSignature();
        }
        _refund(config, amount);
    }

    /// @notice Runs each call on this contract in turn, as its caller (e.g. a claim and a
    ///         refund in one transaction); any failure reverts them all with its own error.
    function multicall(bytes[] calldata data) external returns (bytes[] memory results) {
        results = new bytes[](data.length);
        for (uint256 i = 0; i < data.length; ++i) {
            (bool ok, bytes memory result) = address(this).delegatecall(data[i]);
            if (!ok) {
                if (result.length == 0) revert FailedCall();
                assembly ("memory-safe") {
                    revert(add(result, 0x20), mload(result))
                }
            }
            results[i] = result;
        }
    }

    // ---------------------------------------------------------------------------------------
    // Ids and digests
    // ---------------------------------------------------------------------------------------

    /// @notice The EIP-712 hash of the config under this contract's domain: the same config on
    ///         another chain or contract is another channel.
    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _typedDataHash(keccak256(abi.encode(CHANNEL_CONFIG_TYPEHASH, config)));
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _typedDataHash(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _typedDataHash(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    /// @notice The digest of `ClaimBatch(ClaimEntry[] claims)` over the rows' channel ids,
    ///         ceilings and new totals (defined for an empty batch too, for off-chain tools).
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            VoucherClaim calldata vc = voucherClaims[i];
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH,
                    getChannelId(vc.voucher.channel),
                    vc.voucher.maxClaimableAmount,
                    vc.totalClaimed
                )
            );
        }
        return _typedDataHash(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    /// @notice ERC-5267: the EIP-712 domain, so wallets and tools can read it.
    function eip712Domain()
        external
        view
        returns (
            bytes1 fields,
            string memory name,
            string memory version,
            uint256 chainId,
            address verifyingContract,
            bytes32 salt,
            uint256[] memory extensions
        )
    {
        return (hex"0f", "x402 Batch Settlement", "1", block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    // ---------------------------------------------------------------------------------------
    // Internals
    // ---------------------------------------------------------------------------------------

    function _typedDataHash(bytes32 structHash) private view returns (bytes32) {
        bytes32 domainSeparator =
            keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator, structHash));
    }

    function _isReceiverSide(address sender, ChannelConfig calldata config) private pure returns (bool) {
        return sender == config.receiverAuthorizer || sender == config.receiver;
    }

    /// @dev Raises the channel's claimed total to the row's, within the voucher's ceiling and the
    ///      channel's balance. A total at or below the recorded one is skipped without checking
    ///      the signature: it changes nothing, and a batch stays valid if a row was claimed before.
    function _claim(VoucherClaim calldata vc) private {
        ChannelConfig calldata config = vc.voucher.channel;
        bytes32 channelId = getChannelId(config);
        ChannelState storage ch = channels[channelId];
        if (vc.totalClaimed <= ch.totalClaimed) return;
        if (vc.totalClaimed > vc.voucher.maxClaimableAmount) revert ClaimExceedsCeiling();
        if (vc.totalClaimed > ch.balance) revert ClaimExceedsBalance();

        bytes32 digest = getVoucherDigest(channelId, vc.voucher.maxClaimableAmount);
        if (config.payerAuthorizer != address(0)) {
            // A delegated voucher key is an EOA by design: no EIP-1271 call to a payer contract.
            if (X402BatchSignatures.recover(digest, vc.signature) != config.payerAuthorizer) {
                revert InvalidSignature();
            }
        } else if (!X402BatchSignatures.isValidNow(config.payer, digest, vc.signature)) {
            revert InvalidSignature();
        }

        uint128 delta = vc.totalClaimed - ch.totalClaimed;
        ch.totalClaimed = vc.totalClaimed;
        receivers[config.receiver][config.token].totalClaimed += delta;
        emit Claimed(channelId, msg.sender, delta, vc.totalClaimed);
    }

    /// @dev Returns up to `amount` of the unclaimed balance to the payer and shrinks a pending
    ///      withdrawal by as much. The nonce moves first, even when nothing is left to refund,
    ///      so a signed refund cannot be used twice.
    function _refund(ChannelConfig calldata config, uint128 amount) private {
        if (amount == 0) revert ZeroRefund();
        bytes32 channelId = getChannelId(config);
        unchecked {
            refundNonce[channelId]++;
        }
        ChannelState storage ch = channels[channelId];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 refunded = amount > available ? available : amount;
        if (refunded == 0) return;
        ch.balance -= refunded;

        WithdrawalState storage ws = pendingWithdrawals[channelId];
        if (ws.initiatedAt != 0) {
            if (refunded >= ws.amount) {
                ws.amount = 0;
                ws.initiatedAt = 0;
            } else {
                ws.amount -= refunded;
            }
        }
        emit Refunded(channelId, msg.sender, refunded);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(channelId, config);
        BatchTokenTransfer.safeTransfer(config.token, config.payer, refunded);
    }
}
