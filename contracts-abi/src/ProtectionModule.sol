// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

interface ISafeModuleHost {
    function execTransactionFromModule(address to, uint256 value, bytes calldata data, uint8 operation)
        external
        returns (bool success);
    function isModuleEnabled(address module) external view returns (bool);
}

interface IAavePoolAccount {
    function getUserAccountData(address user)
        external
        view
        returns (
            uint256 totalCollateralBase,
            uint256 totalDebtBase,
            uint256 availableBorrowsBase,
            uint256 currentLiquidationThreshold,
            uint256 ltv,
            uint256 healthFactor
        );
}

/// @title ProtectionModule
/// @notice The on-wallet policy of a managed treasury: a Safe module that lets one service automation
///         key act on the Safe's own Aave V3 position, and only toward safety.
/// @dev Deny by default: while the operator has not enabled it on the Safe, the Safe itself refuses
///      every call (GS104). Once enabled, the automation key may only:
///        - Pool.repay(asset, amount, mode, onBehalfOf == Safe) and Pool.repayWithATokens(asset, amount, mode):
///          LTV must go down and must not end below the park target;
///        - Pool.withdraw(asset, amount, to == Safe): LTV must not go up;
///        - token.approve(Pool, amount) for the listed tokens;
///      always with value 0 and a plain call (never delegatecall). Revoking is the operator's
///      disableModule; a transaction already submitted may still settle.
contract ProtectionModule {
    bytes4 private constant REPAY = bytes4(keccak256("repay(address,uint256,uint256,address)"));
    bytes4 private constant REPAY_WITH_ATOKENS = bytes4(keccak256("repayWithATokens(address,uint256,uint256)"));
    bytes4 private constant WITHDRAW = bytes4(keccak256("withdraw(address,uint256,address)"));
    bytes4 private constant APPROVE = bytes4(keccak256("approve(address,uint256)"));
    uint8 private constant CALL = 0;

    address public immutable safe;
    address public immutable pool;
    address public immutable automation;
    /// park target in basis points of LTV (2500 = 25%)
    uint256 public immutable parkTargetBps;
    mapping(address => bool) public listedToken;

    event ProtectionExecuted(address indexed to, bytes4 indexed selector, uint256 ltvBeforeBps, uint256 ltvAfterBps);

    error NotAutomation();
    error NotEnabled();
    error CallNotAllowed(address to, bytes4 selector);
    error NotForThisSafe();
    error TokenNotListed(address token);
    error LtvDidNotDecrease(uint256 beforeBps, uint256 afterBps);
    error LtvIncreased(uint256 beforeBps, uint256 afterBps);
    error OvershotParkTarget(uint256 afterBps, uint256 parkTargetBps);
    error ExecutionFailed();

    constructor(address safe_, address pool_, address automation_, uint256 parkTargetBps_, address[] memory tokens) {
        safe = safe_;
        pool = pool_;
        automation = automation_;
        parkTargetBps = parkTargetBps_;
        for (uint256 i = 0; i < tokens.length; i++) {
            listedToken[tokens[i]] = true;
        }
    }

    /// @notice LTV of the Safe's Aave position in basis points (0 with no debt)
    function ltvBps() public view returns (uint256) {
        (uint256 collateral, uint256 debt,,,,) = IAavePoolAccount(pool).getUserAccountData(safe);
        if (debt == 0) return 0;
        if (collateral == 0) return type(uint256).max;
        return (debt * 10_000) / collateral;
    }

    function execute(address to, bytes calldata data) external returns (bool) {
        if (msg.sender != automation) revert NotAutomation();
        if (!ISafeModuleHost(safe).isModuleEnabled(address(this))) revert NotEnabled();
        if (data.length < 4) revert CallNotAllowed(to, bytes4(0));
        bytes4 selector = bytes4(data[:4]);
        uint8 kind; // 1 repay, 2 withdraw, 3 approve
        if (to == pool) {
            if (selector == REPAY) {
                (address asset,,, address onBehalfOf) = abi.decode(data[4:], (address, uint256, uint256, address));
                if (onBehalfOf != safe) revert NotForThisSafe();
                if (!listedToken[asset]) revert TokenNotListed(asset);
                kind = 1;
            } else if (selector == REPAY_WITH_ATOKENS) {
                (address asset,,) = abi.decode(data[4:], (address, uint256, uint256));
                if (!listedToken[asset]) revert TokenNotListed(asset);
                kind = 1;
            } else if (selector == WITHDRAW) {
                (address asset,, address recipient) = abi.decode(data[4:], (address, uint256, address));
                if (recipient != safe) revert NotForThisSafe();
                if (!listedToken[asset]) revert TokenNotListed(asset);
                kind = 2;
            } else {
                revert CallNotAllowed(to, selector);
            }
        } else if (listedToken[to] && selector == APPROVE) {
            (address spender,) = abi.decode(data[4:], (address, uint256));
            if (spender != pool) revert CallNotAllowed(to, selector);
            kind = 3;
        } else {
            revert CallNotAllowed(to, selector);
        }

        uint256 before = kind == 3 ? 0 : ltvBps();
        if (!ISafeModuleHost(safe).execTransactionFromModule(to, 0, data, CALL)) revert ExecutionFailed();
        if (kind == 3) return true;
        uint256 afterLtv = ltvBps();
        if (kind == 1) {
            if (afterLtv >= before) revert LtvDidNotDecrease(before, afterLtv);
            if (afterLtv < parkTargetBps) revert OvershotParkTarget(afterLtv, parkTargetBps);
        } else if (afterLtv > before) {
            revert LtvIncreased(before, afterLtv);
        }
        emit ProtectionExecuted(to, selector, before, afterLtv);
        return true;
    }
}
